package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.AppliedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.tensor.Tensor;
import dev.stepweave.tensor.io.Safetensors;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Adapters through the HTTP API: the deployment's registry listed on {@code GET /v1/models},
 * rescanned by {@code POST /v1/loras/rescan}, named by requests in JSON ({@code loras}) and forms
 * ({@code lora.NAME=SCALE}), reported on the job object, and every wrong use a 400 naming its field
 * with nothing queued.
 */
@Timeout(60)
class LoraApiTest {
  @TempDir Path tmp;
  Path dir;
  Path named;
  Harness h;

  @BeforeEach
  void start() throws Exception {
    dir = Files.createDirectories(tmp.resolve("loras"));
    adapter(dir.resolve("zoom.safetensors"), 2, "blocks.0.attn.to_q", "blocks.1.ffn");
    adapter(dir.resolve("anime.safetensors"), 4, "blocks.0.attn.to_k");
    adapter(dir.resolve("fast.safetensors"), 1, "blocks.0.attn.to_v");
    Files.writeString(dir.resolve("fast.recipe.json"), "{\"method\":\"distill\",\"steps\":4}");
    named = adapter(Files.createDirectories(tmp.resolve("elsewhere")).resolve("x.safetensors"), 3);
    h = new Harness(tmp.resolve("artifacts"), ServerConfig.defaults(), deployment());
  }

  @AfterEach
  void stop() {
    h.close();
  }

  /** The registry the server runs with: the directory, and one file under a name of its own. */
  private Extensions deployment() {
    AdapterRegistry registry =
        AdapterRegistry.open(
            new PatternModel()::inspectAdapter, Map.of("pinned", named), List.of(dir));
    return Extensions.builder().adapters(registry).build();
  }

  @Test
  void theModelListsEveryRegisteredAdapter() throws Exception {
    JsonNode model = h.get("/v1/models").json().at("/data/0");
    assertEquals(PatternModel.ID, model.get("id").asText(), model::toString);
    assertEquals("model", model.get("object").asText());
    assertTrue(model.get("caches").isArray(), model::toString);
    JsonNode loras = model.get("loras");
    assertEquals(
        List.of("anime", "fast", "pinned", "zoom"),
        loras.valueStream().map(l -> l.get("name").asText()).toList(),
        model::toString);
    JsonNode zoom = loras.get(3);
    assertEquals("pattern", zoom.get("format").asText());
    assertEquals(2, zoom.get("rank").asInt());
    assertEquals(
        List.of("blocks.0.attn.to_q", "blocks.1.ffn"),
        zoom.get("targets").valueStream().map(JsonNode::asText).toList());
    Path file = dir.resolve("zoom.safetensors");
    assertEquals(Files.size(file), zoom.get("bytes").asLong());
    assertEquals(sha256(file), zoom.get("sha256").asText());
    assertTrue(zoom.get("recipe").isNull(), zoom::toString);
    assertFalse(zoom.has("file"), "the listing must not reveal server paths");
    JsonNode recipe = loras.get(1).get("recipe");
    assertEquals("distill", recipe.get("method").asText(), loras::toString);
    assertEquals(4, recipe.get("steps").asInt());
    assertTrue(recipe.get("sampler").isNull(), recipe::toString);
    assertEquals(sha256(named), loras.get(2).get("sha256").asText());
  }

  @Test
  void aVideoWithAdaptersReportsThemAndEqualsTheSameRequestOnTheEngine() throws Exception {
    Map<String, Object> body = video(21);
    body.put(
        "loras",
        List.of(Map.of("name", "zoom", "scale", 0.5), Map.of("name", "anime", "scale", -1.5)));
    Harness.Reply created = h.postJson("/v1/videos", body);
    assertEquals(200, created.status(), created::text);
    assertEquals(
        List.of(
            lora("zoom", 0.5, dir.resolve("zoom.safetensors")),
            lora("anime", -1.5, dir.resolve("anime.safetensors"))),
        loras(created.json()));

    String id = created.json().get("id").asText();
    JsonNode done = h.awaitTerminal(id);
    assertEquals("completed", done.get("status").asText(), done::toString);
    assertEquals(loras(created.json()), loras(done));
    byte[] served = h.get("/v1/videos/" + id + "/content").body();
    DiffusionParams p = Harness.paramsOf(done);
    GenerationResult alone =
        Harness.runAlone(
            deployment(),
            request(
                TaskType.T2V,
                p,
                List.of(new AdapterUse("zoom", 0.5), new AdapterUse("anime", -1.5))));
    assertEquals(
        List.of(
            new AppliedAdapter("zoom", sha256(dir.resolve("zoom.safetensors")), 0.5),
            new AppliedAdapter("anime", sha256(dir.resolve("anime.safetensors")), -1.5)),
        alone.artifact(Artifact.VideoArtifact.class).provenance().adapters());
    assertArrayEquals(Harness.decoded(tmp, Harness.mp4(tmp, alone)), Harness.decoded(tmp, served));
    byte[] plain =
        Harness.mp4(tmp, Harness.runAlone(deployment(), request(TaskType.T2V, p, List.of())));
    assertFalse(
        java.util.Arrays.equals(Harness.decoded(tmp, plain), Harness.decoded(tmp, served)),
        "the adapters changed nothing: the test would not see them lost");
  }

  @Test
  void aScaleLeftOutIsOneAndAJobWithoutAdaptersListsNone() {
    Map<String, Object> body = video(2);
    body.put("loras", List.of(Map.of("name", "pinned")));
    JsonNode v = h.postJson("/v1/videos", body).json();
    assertEquals(List.of(lora("pinned", 1.0, named)), loras(v));
    JsonNode plain = h.postJson("/v1/videos", video(3)).json();
    assertEquals(0, plain.get("loras").size(), plain::toString);
    h.awaitTerminal(v.get("id").asText());
    h.awaitTerminal(plain.get("id").asText());
  }

  @Test
  void formsStackLoraFieldsInTheOrderTheyCome() throws Exception {
    String boundary = "----lora7";
    StringBuilder body = new StringBuilder();
    for (String[] kv :
        new String[][] {
          {"prompt", "a red fox"}, {"lora.zoom", "0.25"}, {"size", "32x32"}, {"lora.anime", "2"}
        }) {
      body.append("--")
          .append(boundary)
          .append("\r\nContent-Disposition: form-data; name=\"")
          .append(kv[0])
          .append("\"\r\n\r\n")
          .append(kv[1])
          .append("\r\n");
    }
    body.append("--").append(boundary).append("--\r\n");
    Harness.Reply multipart =
        h.post(
            "/v1/videos",
            "multipart/form-data; boundary=" + boundary,
            body.toString().getBytes(StandardCharsets.UTF_8));
    assertEquals(200, multipart.status(), multipart::text);
    List<Map<String, Object>> expected =
        List.of(
            lora("zoom", 0.25, dir.resolve("zoom.safetensors")),
            lora("anime", 2.0, dir.resolve("anime.safetensors")));
    assertEquals(expected, loras(multipart.json()));

    Harness.Reply urlencoded =
        h.post(
            "/v1/videos",
            "application/x-www-form-urlencoded",
            "prompt=a+red+fox&lora.zoom=0.25&size=32x32&lora.anime=2"
                .getBytes(StandardCharsets.UTF_8));
    assertEquals(200, urlencoded.status(), urlencoded::text);
    assertEquals(expected, loras(urlencoded.json()));
    h.awaitTerminal(multipart.json().get("id").asText());
    h.awaitTerminal(urlencoded.json().get("id").asText());
  }

  @Test
  void imagesTakeAdapters() throws Exception {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("prompt", "a lighthouse");
    body.put("size", "32x32");
    body.put("num_inference_steps", 5);
    body.put("seed", 4);
    body.put("loras", List.of(Map.of("name", "anime", "scale", 3)));
    Harness.Reply r = h.postJson("/v1/images/generations", body);
    assertEquals(200, r.status(), r::text);
    byte[] png = Base64.getDecoder().decode(r.json().at("/data/0/b64_json").asText());
    DiffusionParams p =
        new DiffusionParams(
            5, 1.0, 4, 32, 32, 1, 8, "", java.util.Optional.empty(), java.util.Optional.empty());
    assertArrayEquals(
        Harness.png(
            tmp,
            Harness.runAlone(
                deployment(), request(TaskType.T2I, p, List.of(new AdapterUse("anime", 3))))),
        png);
  }

  static Stream<Arguments> badJson() {
    List<Object> nine =
        IntStream.range(0, 9).mapToObj(i -> (Object) Map.of("name", "a" + i)).toList();
    return Stream.of(
        Arguments.of("style", "loras", "must be an array"),
        Arguments.of(Map.of("name", "zoom"), "loras", "must be an array"),
        Arguments.of(List.of(3), "loras[0]", "must be an object"),
        Arguments.of(List.of(Map.of("scale", 1)), "loras[0].name", "loras[0].name is required"),
        Arguments.of(List.of(Map.of("name", 3)), "loras[0].name", "must be a string"),
        Arguments.of(List.of(Map.of("name", "")), "loras[0].name", "adapter name is empty"),
        Arguments.of(
            List.of(Map.of("name", "zoom", "weight", 1)), "loras[0].weight", "unknown parameter"),
        Arguments.of(
            List.of(Map.of("name", "zoom", "scale", "strong")),
            "loras[0].scale",
            "loras[0].scale must be a number, got 'strong'"),
        Arguments.of(
            List.of(Map.of("name", "zoom", "scale", List.of(1))),
            "loras[0].scale",
            "must be a number"),
        Arguments.of(
            List.of(Map.of("name", "zoom"), Map.of("name", "anime", "scale", 4.5)),
            "loras[1].scale",
            "adapter 'anime' scale must be a number in [-4.0, 4.0], got 4.5"),
        Arguments.of(
            List.of(Map.of("name", "zoom", "scale", -5)),
            "loras[0].scale",
            "in [-4.0, 4.0], got -5.0"),
        Arguments.of(nine, "loras", "at most 8 adapters per request, got 9"),
        Arguments.of(
            List.of(Map.of("name", "zoom"), Map.of("name", "zoom", "scale", 2)),
            "loras[1].name",
            "adapter 'zoom' is named twice"),
        Arguments.of(
            List.of(Map.of("name", "zoom"), Map.of("name", "nope")),
            "loras[1].name",
            "unknown adapter 'nope' (registered: anime, fast, pinned, zoom)"));
  }

  @ParameterizedTest
  @MethodSource("badJson")
  void badLorasAreA400NamingTheFieldOnBothEndpoints(Object loras, String param, String message) {
    Map<String, Object> body = video(1);
    body.put("loras", loras);
    assertRefused(h.postJson("/v1/videos", body), param, message);
    Map<String, Object> image = new LinkedHashMap<>(body);
    image.remove("num_inference_steps");
    assertRefused(h.postJson("/v1/images/generations", image), param, message);
    assertNothingQueued();
  }

  @Test
  void badFormFieldsAreA400NamingTheField() {
    assertRefused(form("lora.zoom=strong"), "loras[0].scale", "must be a number, got 'strong'");
    assertRefused(form("lora.zoom=1&lora.anime="), "loras[1].scale", "must be a number, got ''");
    assertRefused(form("lora.zoom=1&lora.anime=9"), "loras[1].scale", "got 9.0");
    assertRefused(form("lora.nope=1"), "loras[0].name", "unknown adapter 'nope'");
    assertRefused(form("lora.=1"), "loras[0].name", "adapter name is empty");
    assertRefused(form("lora.zoom=1&lora.zoom=2"), "lora.zoom", "given twice");
    String twice =
        "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx\r\n"
            + "--b\r\nContent-Disposition: form-data; name=\"lora.zoom\"\r\n\r\n1\r\n"
            + "--b\r\nContent-Disposition: form-data; name=\"lora.zoom\"\r\n\r\n2\r\n--b--\r\n";
    assertRefused(
        h.post(
            "/v1/videos",
            "multipart/form-data; boundary=b",
            twice.getBytes(StandardCharsets.UTF_8)),
        "lora.zoom",
        "given twice");
    Map<String, Object> flatInJson = video(1);
    flatInJson.put("lora.zoom", 1);
    assertRefused(h.postJson("/v1/videos", flatInJson), "lora.zoom", "in JSON, adapters go in");
    assertNothingQueued();
  }

  @Test
  void anAdaptersRecipeRefusesOtherSettings() {
    Map<String, Object> body = video(1);
    body.put("loras", List.of(Map.of("name", "fast")));
    Harness.Reply r = h.postJson("/v1/videos", body);
    BadInputTest.assertError(r, 400, null);
    assertEquals("recipe_refused", r.json().at("/error/code").asText(), r::text);
    assertTrue(
        r.json()
            .at("/error/message")
            .asText()
            .contains("adapter 'fast' (recipe 'distill') refuses steps 6 (recipe assumes 4)"),
        r::text);
    assertNothingQueued();
    body.put("num_inference_steps", 4);
    assertEquals("completed", h.awaitTerminal(h.createVideo(body)).get("status").asText());
  }

  @Test
  void rescanAddsRemovesAndRereadsAndAcceptedJobsKeepTheHashTheyResolved() throws Exception {
    Map<String, Object> body = video(5);
    body.put("prompt", "slow fox");
    body.put("loras", List.of(Map.of("name", "anime")));
    String before = h.createVideo(body);
    String animeSha = sha256(dir.resolve("anime.safetensors"));

    adapter(dir.resolve("noir.safetensors"), 8, "blocks.2.attn.to_out");
    Files.delete(dir.resolve("zoom.safetensors"));
    adapter(dir.resolve("anime.safetensors"), 6, "blocks.0.attn.to_k");
    Harness.Reply r = h.post("/v1/loras/rescan", "application/json", new byte[0]);
    assertEquals(200, r.status(), r::text);
    JsonNode changes = r.json();
    assertEquals("lora.rescan", changes.get("object").asText());
    assertEquals(List.of("noir"), texts(changes.get("added")));
    assertEquals(List.of("zoom"), texts(changes.get("removed")));
    assertEquals(List.of("anime"), texts(changes.get("changed")));
    assertEquals(
        List.of("anime", "fast", "noir", "pinned"),
        changes.get("loras").valueStream().map(l -> l.get("name").asText()).toList());
    assertEquals(changes.get("loras"), h.get("/v1/models").json().at("/data/0/loras"));
    assertEquals(6, changes.at("/loras/0/rank").asInt(), changes::toString);

    // The job accepted before reports the file it resolved; a new one gets the new file.
    assertEquals(animeSha, h.get("/v1/videos/" + before).json().at("/loras/0/sha256").asText());
    JsonNode after = h.postJson("/v1/videos", body).json();
    assertEquals(sha256(dir.resolve("anime.safetensors")), after.at("/loras/0/sha256").asText());
    Map<String, Object> gone = video(6);
    gone.put("loras", List.of(Map.of("name", "zoom")));
    assertRefused(h.postJson("/v1/videos", gone), "loras[0].name", "unknown adapter 'zoom'");

    JsonNode unchanged = h.post("/v1/loras/rescan", "application/json", new byte[0]).json();
    assertEquals(
        0, unchanged.get("added").size() + unchanged.get("removed").size(), unchanged::toString);
    assertEquals(0, unchanged.get("changed").size(), unchanged::toString);
    h.awaitTerminal(before);
    h.awaitTerminal(after.get("id").asText());
  }

  @Test
  void aRefusedFileFailsTheRescanAndLeavesTheRegistryAsItWas() throws IOException {
    JsonNode listed = h.get("/v1/models").json().at("/data/0/loras");
    adapter(dir.resolve("new.safetensors"), 2, "blocks.0.ffn");
    Path bad = dir.resolve("bad.safetensors");
    Safetensors.write(
        bad, Map.of("blocks.0.ffn.weight", Tensor.of(new float[] {1, 2}, 2)), Map.of());
    Harness.Reply r = h.post("/v1/loras/rescan", "application/json", new byte[0]);
    BadInputTest.assertError(r, 400, null);
    assertEquals("invalid_adapter", r.json().at("/error/code").asText(), r::text);
    String message = r.json().at("/error/message").asText();
    assertTrue(message.contains(bad.toString()), message);
    assertTrue(message.contains("key 'blocks.0.ffn.weight' is not an adapter factor"), message);
    assertEquals(listed, h.get("/v1/models").json().at("/data/0/loras"), "registry changed");
    Map<String, Object> body = video(1);
    body.put("loras", List.of(Map.of("name", "new")));
    assertRefused(h.postJson("/v1/videos", body), "loras[0].name", "unknown adapter 'new'");

    Files.delete(bad);
    JsonNode fixed = h.post("/v1/loras/rescan", "application/json", new byte[0]).json();
    assertEquals(List.of("new"), texts(fixed.get("added")), fixed::toString);
  }

  @Test
  void rescanIsAPostAndAServerWithoutAdaptersListsNone() throws Exception {
    BadInputTest.assertError(h.get("/v1/loras/rescan"), 405, null);
    try (Harness plain = new Harness(tmp.resolve("plain"))) {
      assertEquals(0, plain.get("/v1/models").json().at("/data/0/loras").size());
      JsonNode r = plain.post("/v1/loras/rescan", "application/json", new byte[0]).json();
      assertEquals(0, r.get("loras").size(), r::toString);
      Map<String, Object> body = video(1);
      body.put("loras", List.of(Map.of("name", "zoom")));
      assertRefused(
          plain.postJson("/v1/videos", body),
          "loras[0].name",
          "unknown adapter 'zoom' (registered: none)");
    }
  }

  private void assertNothingQueued() {
    assertEquals(0, h.get("/v1/videos").json().get("data").size(), "a refused request was kept");
    assertEquals(0, h.engine.stats().admitted(), "a refused request reached the queue");
  }

  private static void assertRefused(Harness.Reply r, String param, String message) {
    BadInputTest.assertError(r, 400, param);
    assertTrue(r.json().at("/error/message").asText().contains(message), r::text);
  }

  private Harness.Reply form(String loras) {
    return h.post(
        "/v1/videos",
        "application/x-www-form-urlencoded",
        ("prompt=x&size=32x32&" + loras).getBytes(StandardCharsets.UTF_8));
  }

  private static Request request(TaskType task, DiffusionParams p, List<AdapterUse> adapters) {
    return Request.builder(task, p)
        .id("alone")
        .prompt(task == TaskType.T2I ? "a lighthouse" : "a red fox")
        .adapters(adapters)
        .build();
  }

  private static Map<String, Object> video(long seed) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("prompt", "a red fox");
    body.put("size", "32x32");
    body.put("num_inference_steps", 6);
    body.put("seed", seed);
    return body;
  }

  private static Map<String, Object> lora(String name, double scale, Path file) {
    return Map.of("name", name, "scale", scale, "sha256", sha256(file));
  }

  private static List<Map<String, Object>> loras(JsonNode video) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (JsonNode l : video.get("loras")) {
      out.add(
          Map.of(
              "name", l.get("name").asText(),
              "scale", l.get("scale").asDouble(),
              "sha256", l.get("sha256").asText()));
    }
    return out;
  }

  private static List<String> texts(JsonNode array) {
    return array.valueStream().map(JsonNode::asText).toList();
  }

  /** A pattern adapter: an A and a B factor of {@code rank} for each target. */
  static Path adapter(Path file, int rank, String... targets) {
    Map<String, Tensor> tensors = new LinkedHashMap<>();
    for (String t : targets.length == 0 ? new String[] {"blocks.0.attn.to_q"} : targets) {
      tensors.put(t + ".lora_A.weight", Tensor.of(new float[rank * 4], rank, 4));
      tensors.put(t + ".lora_B.weight", Tensor.of(new float[4 * rank], 4, rank));
    }
    Safetensors.write(file, tensors, Map.of());
    return file;
  }

  private static String sha256(Path file) {
    try {
      return HexFormat.of()
          .formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
