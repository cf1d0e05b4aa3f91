package dev.stepweave.cli.bench;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;

/**
 * A deterministic list of requests of one traffic: the same traffic, count and seed give the same
 * prompts, seeds, sizes, frame counts and step counts on every machine.
 *
 * <p>Sizes are few on purpose: a serving fleet sees a handful of standard sizes, and only requests
 * of one latent shape can share a batched step. Step counts vary freely (each batch row carries its
 * own timestep), so requests at different points of their loops still batch.
 */
public record Workload(Traffic traffic, List<Request> requests) {
  private static final List<String> SUBJECTS =
      List.of(
          "a red fox",
          "a paper boat",
          "an old lighthouse",
          "a hummingbird",
          "a city tram",
          "a snowy owl");
  private static final List<String> SCENES =
      List.of(
          "at dawn",
          "in the rain",
          "on a windy hill",
          "under neon lights",
          "by a quiet lake",
          "in fog");
  private static final int FPS = 16;
  private static final double GUIDANCE = 5.0;

  public Workload {
    requests = List.copyOf(requests);
  }

  /** {@code n} requests of the traffic, ids {@code prefix-0 …}, drawn from {@code seed}. */
  public static Workload generate(Traffic traffic, int n, long seed, String prefix) {
    if (n < 1) {
      throw new IllegalArgumentException("a workload needs at least one request, got " + n);
    }
    Random rnd = new Random(seed);
    List<Traffic.RequestKind> kindOf = new ArrayList<>();
    int[] counts = traffic.counts(n);
    for (int k = 0; k < counts.length; k++) {
      kindOf.addAll(Collections.nCopies(counts[k], traffic.kinds().get(k)));
    }
    Collections.shuffle(kindOf, rnd);
    List<Request> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Traffic.RequestKind kind = kindOf.get(i);
      String prompt = pick(SUBJECTS, rnd) + " " + pick(SCENES, rnd);
      long requestSeed = rnd.nextInt(1 << 30);
      Traffic.Size size = pick(kind.sizes(), rnd);
      int frames = pick(kind.frames(), rnd);
      var params =
          new DiffusionParams(
              pick(kind.steps(), rnd),
              GUIDANCE,
              requestSeed,
              size.width(),
              size.height(),
              frames,
              FPS,
              "",
              Optional.empty(),
              Optional.empty());
      out.add(
          Request.builder(frames == 1 ? TaskType.T2I : TaskType.T2V, params)
              .id(prefix + "-" + i)
              .prompt(prompt)
              .build());
    }
    return new Workload(traffic, out);
  }

  /** Denoising steps over all requests: the DiT work units the workload asks for. */
  public int totalSteps() {
    return requests.stream().mapToInt(r -> r.params().steps()).sum();
  }

  /**
   * Transformer batch rows over all requests: a guided step is two (conditional, unconditional).
   */
  public int totalRows() {
    return requests.stream()
        .mapToInt(r -> r.params().steps() * (r.params().guidance() > 1 ? 2 : 1))
        .sum();
  }

  /** How many requests are one-frame images. */
  public long imageCount() {
    return requests.stream().filter(r -> r.params().frames() == 1).count();
  }

  private static <T> T pick(List<T> options, Random rnd) {
    return options.get(rnd.nextInt(options.size()));
  }
}
