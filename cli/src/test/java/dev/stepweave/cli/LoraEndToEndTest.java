package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import dev.stepweave.core.request.AdapterUse;
import dev.stepweave.core.request.AppliedAdapter;
import dev.stepweave.core.request.Artifact;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import dev.stepweave.core.runtime.Engine;
import dev.stepweave.core.runtime.EngineConfig;
import dev.stepweave.core.runtime.GenerationResult;
import dev.stepweave.media.Mp4Reader;
import dev.stepweave.media.Mp4Writer;
import dev.stepweave.models.wan.WanModel;
import dev.stepweave.tensor.cpu.CpuBackend;
import dev.stepweave.tensor.io.SafetensorsFile;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The golden adapters on the tiny LoRA checkpoint through every surface: {@code generate --lora},
 * the Java API as the README shows it, and {@code serve --lora-dir} over HTTP — each run records
 * the adapters it applied, and the served video equals the same request on the engine.
 */
@Timeout(300)
class LoraEndToEndTest {
  static final Path CHECKPOINT =
      Path.of(System.getProperty("stepweave.golden")).resolve("wan21-lora-tiny");
  static final Path LORAS = CHECKPOINT.resolve("loras");
  static final Path A = LORAS.resolve("adapter_a_diffusers.safetensors");
  static final Path B = LORAS.resolve("adapter_b_wan_original.safetensors");
  static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path tmp;

  @Test
  void generateAppliesTheAdaptersItIsGivenAndRecordsThem() throws Exception {
    Path latents = tmp.resolve("a.safetensors");
    var r = generate("--lora", A + ":0.8", "--save-latents", latents.toString());
    assertEquals(0, r.exit(), r.err());
    assertTrue(r.out().contains("lora    adapter_a_diffusers at 0.8 ("), r.out());
    assertEquals(
        List.of(Map.of("name", "adapter_a_diffusers", "sha256", sha256(A), "scale", 0.8)),
        adaptersOf(latents));

    Path stacked = tmp.resolve("ab.safetensors");
    var ab =
        generate("--lora", A + ":0.8", "--lora", B + ":-0.5", "--save-latents", stacked.toString());
    assertEquals(0, ab.exit(), ab.err());
    assertEquals(
        List.of(
            Map.of("name", "adapter_a_diffusers", "sha256", sha256(A), "scale", 0.8),
            Map.of("name", "adapter_b_wan_original", "sha256", sha256(B), "scale", -0.5)),
        adaptersOf(stacked));

    Path plain = tmp.resolve("plain.safetensors");
    assertEquals(0, generate("--save-latents", plain.toString()).exit());
    assertFalse(Arrays.equals(latentsOf(plain), latentsOf(latents)), "adapter a changed nothing");
    assertFalse(Arrays.equals(latentsOf(latents), latentsOf(stacked)), "adapter b changed nothing");
  }

  @Test
  void theJavaApiAsTheReadmeShowsIt() throws Exception {
    try (WanModel model = WanModel.load(CHECKPOINT, new CpuBackend())) {
      AdapterRegistry adapters =
          AdapterRegistry.open(model::inspectAdapter, Map.of("style", A), List.of(LORAS));
      try (Engine engine =
          new Engine(
              model, EngineConfig.defaults(), Extensions.builder().adapters(adapters).build())) {
        Request request =
            Request.builder(TaskType.T2V, params(5))
                .prompt("a red ball")
                .adapters(
                    List.of(
                        new AdapterUse("style", 0.8), new AdapterUse("adapter_b_wan_original", 1)))
                .build();
        GenerationResult result = engine.submit(request).result().get();
        assertEquals(
            List.of(
                new AppliedAdapter("style", sha256(A), 0.8),
                new AppliedAdapter("adapter_b_wan_original", sha256(B), 1.0)),
            result.artifact(Artifact.VideoArtifact.class).provenance().adapters());
        assertEquals(
            List.of("adapter_a_diffusers", "adapter_b_wan_original", "style"),
            adapters.list().stream().map(a -> a.name()).toList());
      }
    }
  }

  @Test
  void serveListsTheDirectoryAndAServedVideoEqualsTheEngineWithTheSameAdapters() throws Exception {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd)
        .parseArgs(
            "--model",
            CHECKPOINT.toString(),
            "--port",
            "0",
            "--artifacts",
            tmp.resolve("artifacts").toString(),
            "--lora-dir",
            LORAS.toString());
    StringWriter out = new StringWriter();
    HttpClient http = HttpClient.newHttpClient();
    try (ServeCommand.Serving serving =
        cmd.start(new PrintWriter(out, true), new PrintWriter(new StringWriter(), true))) {
      assertTrue(
          out.toString().contains("; loras: adapter_a_diffusers, adapter_b_wan_original"),
          out.toString());
      String base = serving.server().baseUri().toString();
      JsonNode loras = JSON.readTree(get(http, base + "/v1/models")).at("/data/0/loras");
      assertEquals(2, loras.size(), loras::toString);
      assertEquals("adapter_a_diffusers", loras.at("/0/name").asText());
      assertEquals(sha256(A), loras.at("/0/sha256").asText());
      assertEquals(Files.size(B), loras.at("/1/bytes").asLong());
      assertTrue(loras.at("/0/rank").asInt() > 0, loras::toString);
      assertTrue(loras.at("/1/targets").size() > 0, loras::toString);

      String body =
          "{\"prompt\":\"a red ball bouncing\",\"size\":\"32x32\",\"num_frames\":5,"
              + "\"num_inference_steps\":2,\"seed\":3,\"fps\":8,\"guidance_scale\":3,"
              + "\"loras\":[{\"name\":\"adapter_b_wan_original\",\"scale\":0.5},"
              + "{\"name\":\"adapter_a_diffusers\"}]}";
      HttpResponse<String> created =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos"))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString(body))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(200, created.statusCode(), created.body());
      JsonNode v = JSON.readTree(created.body());
      assertEquals("adapter_b_wan_original", v.at("/loras/0/name").asText(), v::toString);
      assertEquals(0.5, v.at("/loras/0/scale").asDouble());
      assertEquals(sha256(B), v.at("/loras/0/sha256").asText());
      assertEquals(1.0, v.at("/loras/1/scale").asDouble());
      String id = v.get("id").asText();
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (!v.get("status").asText().equals("completed") && System.nanoTime() < deadline) {
        assertTrue(v.get("status").asText().matches("queued|in_progress"), v::toString);
        Thread.sleep(50);
        v = JSON.readTree(get(http, base + "/v1/videos/" + id));
      }
      assertEquals("completed", v.get("status").asText(), v::toString);
      HttpResponse<byte[]> content =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "/v1/videos/" + id + "/content")).build(),
              HttpResponse.BodyHandlers.ofByteArray());
      Request same =
          Request.builder(
                  TaskType.T2V,
                  new DiffusionParams(
                      2, 3.0, 3, 32, 32, 5, 8, "", Optional.empty(), Optional.empty()))
              .prompt("a red ball bouncing")
              .adapters(
                  List.of(
                      new AdapterUse("adapter_b_wan_original", 0.5),
                      new AdapterUse("adapter_a_diffusers", 1)))
              .build();
      Artifact.VideoArtifact alone =
          serving.engine().submit(same).result().get().artifact(Artifact.VideoArtifact.class);
      Path file = tmp.resolve("alone.mp4");
      Mp4Writer.write(file, alone.frames(), alone.fps());
      Path served = Files.write(tmp.resolve("served.mp4"), content.body());
      assertArrayEquals(
          Mp4Reader.read(file).frames().toFloatArray(),
          Mp4Reader.read(served).frames().toFloatArray());
    }
  }

  private CliHarness generate(String... extra) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "generate",
                "a red ball bouncing",
                "--model",
                CHECKPOINT.toString(),
                "--size",
                "32x32",
                "--frames",
                "5",
                "--steps",
                "2",
                "--seed",
                "3",
                "-o",
                tmp.resolve("out-" + extra.length + ".mp4").toString()));
    args.addAll(List.of(extra));
    return CliHarness.run(args.toArray(String[]::new));
  }

  private static DiffusionParams params(int frames) {
    return new DiffusionParams(
        2, 3.0, 3, 32, 32, frames, 8, "", Optional.empty(), Optional.empty());
  }

  private static List<Map<String, Object>> adaptersOf(Path latents) throws Exception {
    try (SafetensorsFile f = SafetensorsFile.open(latents)) {
      String json = f.metadata().get("adapters");
      assertTrue(json != null, "no adapters in " + f.metadata());
      return JSON.readValue(json, new com.fasterxml.jackson.core.type.TypeReference<>() {});
    }
  }

  private static float[] latentsOf(Path file) {
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      return f.load("latents").toFloatArray();
    }
  }

  private static String get(HttpClient http, String uri) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(uri)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return r.body();
  }

  private static String sha256(Path file) throws Exception {
    return HexFormat.of()
        .formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
  }
}
