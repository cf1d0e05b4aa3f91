package dev.stepweave.training.shapes;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** An attribute value that is one word of a shapes caption: its enum constant, lowercased. */
interface Word {
  String name();

  default String word() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The constant whose word is {@code word}, or a one-line error listing the words there are. */
  static <E extends Enum<E> & Word> E parse(Class<E> type, String what, String word) {
    for (E e : type.getEnumConstants()) {
      if (e.word().equals(word)) {
        return e;
      }
    }
    throw new IllegalArgumentException(
        "unknown "
            + what
            + " '"
            + word
            + "' (known: "
            + Arrays.stream(type.getEnumConstants())
                .map(Word::word)
                .collect(Collectors.joining(", "))
            + ")");
  }
}
