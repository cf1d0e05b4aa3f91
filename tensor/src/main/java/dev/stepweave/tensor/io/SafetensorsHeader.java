package dev.stepweave.tensor.io;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stepweave.tensor.DType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The JSON header of a safetensors file: where each tensor lies in the data section, and the
 * optional {@code __metadata__} string map. Offsets are relative to the start of the data section.
 */
record SafetensorsHeader(
    SortedMap<String, StoredTensor> tensors, SortedMap<String, String> metadata) {
  static final String METADATA_KEY = "__metadata__";

  /** One header entry; {@code [begin, end)} are byte offsets into the data section. */
  record StoredTensor(String name, DType dtype, int[] shape, long begin, long end) {
    long byteSize() {
      return end - begin;
    }
  }

  SafetensorsHeader {
    tensors = Collections.unmodifiableSortedMap(new TreeMap<>(tensors));
    metadata = Collections.unmodifiableSortedMap(new TreeMap<>(metadata));
  }

  /**
   * Parses and validates a header against the size of the data section that follows it.
   *
   * @throws CheckpointException naming {@code file} and the offending tensor
   */
  static SafetensorsHeader parse(Path file, byte[] json, long dataBytes) {
    JsonNode root = JsonFiles.parseObject(json, file + ": header");
    SortedMap<String, StoredTensor> tensors = new TreeMap<>();
    SortedMap<String, String> metadata = new TreeMap<>();
    for (Map.Entry<String, JsonNode> field : root.properties()) {
      if (field.getKey().equals(METADATA_KEY)) {
        metadata.putAll(parseMetadata(file, field.getValue()));
      } else {
        StoredTensor t = parseTensor(file, field.getKey(), field.getValue());
        if (t.end() > dataBytes) {
          throw bad(
              file,
              t.name(),
              "has data_offsets ["
                  + t.begin()
                  + ", "
                  + t.end()
                  + "] beyond the data section of "
                  + dataBytes
                  + " bytes (truncated file?)");
        }
        tensors.put(t.name(), t);
      }
    }
    rejectOverlaps(file, tensors.values());
    return new SafetensorsHeader(tensors, metadata);
  }

  private static Map<String, String> parseMetadata(Path file, JsonNode node) {
    if (!node.isObject()) {
      throw new CheckpointException(file + ": header " + METADATA_KEY + " is not a JSON object");
    }
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<String, JsonNode> e : node.properties()) {
      if (!e.getValue().isTextual()) {
        throw new CheckpointException(
            file + ": header " + METADATA_KEY + " value of '" + e.getKey() + "' is not a string");
      }
      out.put(e.getKey(), e.getValue().textValue());
    }
    return out;
  }

  private static StoredTensor parseTensor(Path file, String name, JsonNode node) {
    if (!node.isObject()) {
      throw bad(file, name, "header entry is not a JSON object");
    }
    JsonNode dtypeNode = node.get("dtype");
    if (dtypeNode == null || !dtypeNode.isTextual()) {
      throw bad(file, name, "has no string 'dtype'");
    }
    DType dtype;
    try {
      dtype = DType.fromSafetensorsName(dtypeNode.textValue());
    } catch (IllegalArgumentException e) {
      throw bad(file, name, "has unsupported dtype '" + dtypeNode.textValue() + "'");
    }
    int[] shape = parseShape(file, name, node.get("shape"));
    long[] offsets = parseOffsets(file, name, node.get("data_offsets"));
    long expected = byteSizeOf(file, name, dtype, shape);
    if (offsets[1] - offsets[0] != expected) {
      throw bad(
          file,
          name,
          "data_offsets ["
              + offsets[0]
              + ", "
              + offsets[1]
              + "] span "
              + (offsets[1] - offsets[0])
              + " bytes but "
              + dtype
              + Arrays.toString(shape)
              + " needs "
              + expected);
    }
    return new StoredTensor(name, dtype, shape, offsets[0], offsets[1]);
  }

  private static int[] parseShape(Path file, String name, JsonNode node) {
    if (node == null || !node.isArray()) {
      throw bad(file, name, "has no 'shape' array");
    }
    int[] shape = new int[node.size()];
    for (int i = 0; i < shape.length; i++) {
      JsonNode d = node.get(i);
      if (!d.isIntegralNumber()) {
        throw bad(file, name, "has a non-integer dimension " + d + " in shape " + node);
      }
      if (d.bigIntegerValue().signum() < 0) {
        throw bad(file, name, "has a negative dimension in shape " + node);
      }
      if (!d.canConvertToInt()) {
        throw bad(file, name, "has a dimension too large in shape " + node);
      }
      shape[i] = d.intValue();
    }
    return shape;
  }

  private static long[] parseOffsets(Path file, String name, JsonNode node) {
    if (node == null || !node.isArray() || node.size() != 2) {
      throw bad(file, name, "has no 'data_offsets' pair");
    }
    long[] offsets = new long[2];
    for (int i = 0; i < 2; i++) {
      JsonNode o = node.get(i);
      if (!o.isIntegralNumber() || !o.canConvertToLong() || o.longValue() < 0) {
        throw bad(file, name, "has invalid data_offsets " + node);
      }
      offsets[i] = o.longValue();
    }
    if (offsets[1] < offsets[0]) {
      throw bad(file, name, "has data_offsets " + node + " that end before they begin");
    }
    return offsets;
  }

  private static long byteSizeOf(Path file, String name, DType dtype, int[] shape) {
    try {
      long bytes = dtype.byteSize();
      for (int d : shape) {
        bytes = Math.multiplyExact(bytes, d);
      }
      return bytes;
    } catch (ArithmeticException e) {
      throw bad(file, name, "has a shape " + Arrays.toString(shape) + " too large to address");
    }
  }

  /** Two non-empty tensors must never share bytes: writing one would corrupt the other. */
  private static void rejectOverlaps(Path file, Iterable<StoredTensor> all) {
    List<StoredTensor> byBegin = new ArrayList<>();
    for (StoredTensor t : all) {
      if (t.byteSize() > 0) {
        byBegin.add(t);
      }
    }
    byBegin.sort(Comparator.comparingLong(StoredTensor::begin));
    StoredTensor furthest = null;
    for (StoredTensor t : byBegin) {
      if (furthest != null && t.begin() < furthest.end()) {
        throw bad(
            file,
            t.name(),
            "(bytes ["
                + t.begin()
                + ", "
                + t.end()
                + ")) overlaps tensor '"
                + furthest.name()
                + "' (bytes ["
                + furthest.begin()
                + ", "
                + furthest.end()
                + "))");
      }
      if (furthest == null || t.end() > furthest.end()) {
        furthest = t;
      }
    }
  }

  private static CheckpointException bad(Path file, String tensor, String what) {
    return new CheckpointException(file + ": tensor '" + tensor + "' " + what);
  }

  /**
   * A header as the reference writer lays it out: compact JSON, {@code __metadata__} first, then
   * the tensors in the order of their data, padded with spaces so that the data section starts
   * 8-byte aligned.
   */
  static byte[] encode(List<StoredTensor> inDataOrder, Map<String, String> metadata) {
    ObjectNode root = JsonFiles.MAPPER.createObjectNode();
    if (!metadata.isEmpty()) {
      ObjectNode meta = root.putObject(METADATA_KEY);
      metadata.forEach(meta::put);
    }
    for (StoredTensor t : inDataOrder) {
      ObjectNode entry = root.putObject(t.name());
      entry.put("dtype", t.dtype().safetensorsName());
      ArrayNode shape = entry.putArray("shape");
      for (int d : t.shape()) {
        shape.add(d);
      }
      entry.putArray("data_offsets").add(t.begin()).add(t.end());
    }
    byte[] json;
    try {
      json = JsonFiles.MAPPER.writeValueAsBytes(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot encode a safetensors header", e);
    }
    int padded = (json.length + 7) / 8 * 8;
    byte[] out = Arrays.copyOf(json, padded);
    Arrays.fill(out, json.length, padded, (byte) ' ');
    return out;
  }
}
