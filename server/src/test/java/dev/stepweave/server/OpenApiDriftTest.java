package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.request.RequestEvent;
import dev.stepweave.server.store.ArtifactState;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.RecordComponent;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code openapi.json} against the server itself, both ways: every route of {@link Routes} (the
 * table calls are checked against) with exactly its methods, and each documented one answered by
 * its handler; the create calls' fields against the field tables the form parser refuses others by;
 * every object the server answers with (video, list, deleted, model, alias, images, rescan, error,
 * each event's data) against its schema, key for key, from live answers; the event names against
 * the engine's event types; the error codes and types against every one the server's sources can
 * send.
 */
@Timeout(60)
class OpenApiDriftTest {
  private static final Set<String> HTTP_METHODS =
      Set.of("get", "put", "post", "delete", "options", "head", "patch", "trace");
  private static final String KEY = "sk-drift-test-key-0123456789";
  private static JsonNode doc;

  @TempDir Path tmp;

  @BeforeAll
  static void read() throws IOException {
    try (InputStream in = OpenApi.class.getResourceAsStream(OpenApi.ROUTE)) {
      doc = Harness.JSON.readTree(in);
    }
  }

  @Test
  void theServerServesTheDocumentWithoutAKey() throws IOException {
    assertEquals("3.1.0", doc.path("openapi").asText());
    Path keys = tmp.resolve("keys.txt");
    Files.writeString(keys, KEY + " team\n");
    try (Harness h =
        new Harness(tmp.resolve("a"), new HttpConfig.Builder().apiKeyFile(keys).build())) {
      Harness.Reply r = h.get("/openapi.json");
      assertEquals(200, r.status());
      assertEquals("application/json", r.contentType());
      try (InputStream in = OpenApi.class.getResourceAsStream(OpenApi.ROUTE)) {
        assertArrayEquals(in.readAllBytes(), r.body());
      }
      assertEquals(401, h.get("/v1/models").status(), "the API itself still needs the key");
    }
  }

  @Test
  void everyReferenceInTheDocumentResolves() {
    List<String> refs = new ArrayList<>();
    collectRefs(doc, refs);
    assertTrue(refs.size() > 50, "the document refers to its components: " + refs.size());
    for (String ref : refs) {
      assertTrue(ref.startsWith("#/"), ref);
      assertTrue(doc.at(ref.substring(1)).isObject(), "unresolved " + ref);
    }
  }

  private static void collectRefs(JsonNode node, List<String> out) {
    if (node.isObject() && node.has("$ref")) {
      out.add(node.get("$ref").asText());
    }
    node.forEach(child -> collectRefs(child, out));
  }

  @Test
  void everyRouteAndMethodIsDocumentedAndNothingElse() {
    Set<String> documented = new TreeSet<>();
    doc.path("paths")
        .properties()
        .forEach(
            p ->
                p.getValue()
                    .properties()
                    .forEach(
                        op -> {
                          if (HTTP_METHODS.contains(op.getKey())) {
                            documented.add(op.getKey().toUpperCase(Locale.ROOT) + " " + p.getKey());
                          }
                        }));
    Set<String> served = new TreeSet<>();
    Routes.ALL.forEach(r -> r.methods().forEach(m -> served.add(m + " " + r.path())));
    assertEquals(served, documented);
  }

  /**
   * Each documented operation reaches its handler (neither "no route" nor 405), and any other
   * method on its path is a 405: the routing behind the table does what the table says.
   */
  @Test
  void everyDocumentedOperationIsAnsweredByItsHandler() throws IOException {
    Path keys = tmp.resolve("keys.txt");
    Files.writeString(keys, KEY + " team\n"); // not the admin key: drain and rescan answer 403
    HttpConfig http = new HttpConfig.Builder().apiKeyFile(keys).keyRate(1000, 1000).build();
    try (Harness h = new Harness(tmp.resolve("a"), http)) {
      for (Routes.Route route : Routes.ALL) {
        String path =
            route
                .path()
                .replace("{video_id}", "video_" + "0".repeat(32))
                .replace("{model}", PatternModel.ID);
        for (String method : List.of("GET", "HEAD", "POST", "DELETE", "PUT", "PATCH")) {
          Harness.Reply r =
              h.send(
                  HttpRequest.newBuilder(h.uri(path))
                      .header("Authorization", "Bearer " + KEY)
                      .method(method, HttpRequest.BodyPublishers.noBody()));
          String what = method + " " + route.path() + ": " + r.status() + " " + r.text();
          if (route.methods().contains(method)) {
            assertNotEquals(405, r.status(), what);
            assertTrue(!r.text().contains("no route"), what);
          } else {
            assertEquals(405, r.status(), what);
          }
        }
      }
    }
  }

  @Test
  void theCreateCallsTakeExactlyTheDocumentedFields() {
    JsonNode video = body("/v1/videos", "post");
    assertEquals(Api.VIDEO_FIELDS, names(video.path("application/json").path("schema")));
    Set<String> formFields = new HashSet<>(Api.VIDEO_FIELDS);
    formFields.remove(FormFields.LORAS); // forms stack adapters as lora.NAME fields
    assertEquals(formFields, names(video.path("multipart/form-data").path("schema")));
    assertEquals(formFields, names(video.path("application/x-www-form-urlencoded").path("schema")));
    JsonNode images = body("/v1/images/generations", "post");
    assertEquals(Api.IMAGE_FIELDS, names(images.path("application/json").path("schema")));
    for (JsonNode b : List.of(video, images)) {
      JsonNode form = b.path("multipart/form-data").path("schema").path("patternProperties");
      assertTrue(form.has("^cache\\.[a-z0-9_]+\\.[A-Za-z0-9_]+$"), "cache.PLUGIN.PARAM");
      assertTrue(form.has("^lora\\..+$"), "lora.NAME");
    }
  }

  @Test
  void everyObjectHasExactlyTheDocumentedFields() throws IOException {
    Path loras = Files.createDirectories(tmp.resolve("loras"));
    LoraApiTest.adapter(loras.resolve("style.safetensors"), 2, "blocks.0.attn.to_q");
    var deployment =
        dev.stepweave.core.extend.Extensions.builder()
            .enable(PatternModel.CACHE)
            .adapters(
                dev.stepweave.core.extend.AdapterRegistry.open(
                    new PatternModel()::inspectAdapter, Map.of(), List.of(loras)))
            .build();
    try (Harness h =
        new Harness(
            tmp.resolve("a"),
            ServerConfig.defaults(),
            new HttpConfig.Builder().modelAliases(Map.of("sora-2", PatternModel.ID)).build(),
            deployment,
            new PatternModel())) {
      String id =
          h.createVideo(
              Map.of(
                  "prompt",
                  "a red ball",
                  "cache",
                  Map.of("patterncache", Map.of()),
                  "loras",
                  List.of(Map.of("name", "style")),
                  Settings.PREVIEW_EVERY,
                  1));
      JsonNode video = h.awaitTerminal(id);
      assertEquals("completed", video.path("status").asText(), video::toString);
      assertFields("Video", video);
      assertFields("Timings", video.path("timings"));
      assertFields("AppliedLora", video.path("loras").path(0));
      assertFields("VideoList", h.get("/v1/videos").json());
      JsonNode models = h.get("/v1/models").json();
      assertFields("ModelList", models);
      JsonNode served = models.path("data").path(0);
      assertFields("Model", served);
      assertEquals(
          minus(names(schema("Model")), Set.of("alias_of")),
          fieldNames(served),
          "the served model: every field of Model but alias_of");
      assertFields("ModelDefaults", served.path("defaults"));
      assertFields("CachePlugin", served.path("caches").path(0));
      assertFields("Lora", served.path("loras").path(0));
      assertEquals(
          Set.of("id", "object", "created", "owned_by", "alias_of"),
          fieldNames(h.get("/v1/models/sora-2").json()),
          "an alias");
      assertTrue(names(schema("Model")).containsAll(fieldNames(h.get("/v1/models/sora-2").json())));
      JsonNode images =
          h.postJson(
                  "/v1/images/generations",
                  Map.of("prompt", "a dot", "cache", Map.of("patterncache", Map.of())))
              .json();
      assertFields("ImagesResponse", images);
      assertFields("ImageData", images.path("data").path(0));
      assertFields(
          "LoraRescan", h.post("/v1/loras/rescan", "application/json", "{}".getBytes()).json());
      assertFields("Status", h.get("/health").json());
      JsonNode error = h.get("/v1/videos/video_" + "0".repeat(32)).json();
      assertFields("Error", error);
      assertEquals(
          names(schema("Error").path("properties").path("error")), fieldNames(error.path("error")));

      // The event stream, replayed whole for a finished job: each event's data as documented.
      JsonNode events = schema("Event").path("x-stepweave-events");
      Set<String> seen = new TreeSet<>();
      for (String frame : h.get("/v1/videos/" + id + "/events").text().split("\n\n")) {
        Matcher type = Pattern.compile("(?m)^event: (.+)$").matcher(frame);
        Matcher data = Pattern.compile("(?m)^data: (.+)$").matcher(frame);
        if (!type.find() || !data.find()) {
          continue;
        }
        seen.add(type.group(1));
        String ref = events.path(type.group(1)).asText();
        assertTrue(!ref.isEmpty(), "event " + type.group(1) + " is not documented");
        assertFields(ref.substring(ref.lastIndexOf('/') + 1), Harness.JSON.readTree(data.group(1)));
      }
      assertTrue(
          seen.containsAll(
              Set.of(
                  "request.queued",
                  "request.started",
                  "request.step",
                  "media.preview",
                  "artifact.ready",
                  "request.completed",
                  "video.completed")),
          seen.toString());
      assertFields("VideoDeleted", h.delete("/v1/videos/" + id).json()); // last: it forgets the job
    }
  }

  /** The documented event names: the engine's event types, then video.<terminal status>. */
  @Test
  void theEventNamesAreTheEnginesAndTheServersOwn() throws ReflectiveOperationException {
    Set<String> expected = new TreeSet<>();
    for (Class<?> type : RequestEvent.class.getPermittedSubclasses()) {
      expected.add(sample(type).type());
    }
    for (JobStatus s : JobStatus.values()) {
      if (s.isTerminal()) {
        expected.add("video." + s.wireName());
      }
    }
    assertEquals(expected, fieldNames(schema("Event").path("x-stepweave-events")));
  }

  /**
   * The error codes and types the server can send, read from its sources (every {@code
   * ApiException} it constructs, and the protocol errors' codes), are exactly the documented ones;
   * and each status's response lists codes of that status only once across the document.
   */
  @Test
  void theErrorCodesAndTypesAreTheOnesTheServerSends() throws IOException {
    Set<String> codes = new TreeSet<>();
    Set<String> types = new TreeSet<>(Set.of("invalid_request_error", "server_error"));
    try (Stream<Path> files = Files.walk(Path.of("src/main/java/dev/stepweave/server"))) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        collect(Files.readString(file), file.getFileName().toString(), codes, types);
      }
    }
    for (int status = 400; status < 600; status++) {
      String code = JsonErrorHandler.code(status);
      if (!code.equals("http_" + status)) {
        codes.add(code);
      }
    }
    Set<String> documented = new TreeSet<>();
    schema("ErrorCode").path("enum").forEach(c -> documented.add(c.asText()));
    assertEquals(codes, documented, "error codes");
    Set<String> listed = new TreeSet<>();
    doc.path("components")
        .path("responses")
        .forEach(r -> r.path("x-stepweave-codes").forEach(c -> listed.add(c.asText())));
    assertEquals(documented, listed, "each code under the status that sends it");
    Set<String> documentedTypes = new TreeSet<>();
    schema("Error")
        .path("properties")
        .path("error")
        .path("properties")
        .path("type")
        .path("enum")
        .forEach(t -> documentedTypes.add(t.asText()));
    assertEquals(types, documentedTypes, "error types");
  }

  private static final Pattern CONSTRUCTED =
      Pattern.compile("new ApiException\\(|ApiException\\.(forbidden|conflict)\\(|unauthorized\\(");

  /** The code (and type) of every ApiException a source file constructs. */
  private static void collect(String source, String file, Set<String> codes, Set<String> types) {
    if (source.contains("ApiException.badRequest(")) {
      codes.add("invalid_value");
    }
    if (source.contains("ApiException.notFound(")) {
      codes.add("not_found");
    }
    Matcher m = CONSTRUCTED.matcher(source);
    while (m.find()) {
      List<String> args = arguments(source, m.end());
      if (args.isEmpty()) {
        continue; // a declaration's parameter list, as in "unauthorized(String code, …)"
      }
      boolean full = m.group().startsWith("new");
      String code = args.get(full ? 3 : 0);
      if (full && args.get(1).startsWith("\"")) {
        types.add(unquote(args.get(1)));
      }
      if (code.startsWith("\"") && code.endsWith("\"")) {
        codes.add(unquote(code));
      } else if (code.startsWith("\"video_\" + state")) {
        for (ArtifactState s : ArtifactState.values()) {
          if (s != ArtifactState.PRESENT) {
            codes.add("video_" + s.name().toLowerCase(Locale.ROOT));
          }
        }
      } else if (!code.equals("code") && !code.startsWith("JsonErrorHandler.code(")) {
        // "code": a helper passing its caller's code on; the protocol errors' codes are above.
        fail(file + ": an error code this test cannot read: " + code);
      }
    }
  }

  /** The top-level, comma-separated arguments of a call whose '(' ends at {@code from}. */
  private static List<String> arguments(String s, int from) {
    List<String> out = new ArrayList<>();
    int depth = 0;
    boolean string = false;
    StringBuilder arg = new StringBuilder();
    for (int i = from; i < s.length(); i++) {
      char c = s.charAt(i);
      if (string) {
        arg.append(c);
        if (c == '\\') {
          arg.append(s.charAt(++i));
        } else if (c == '"') {
          string = false;
        }
        continue;
      }
      if (c == '"') {
        string = true;
      } else if (c == '(') {
        depth++;
      } else if (c == ')' && depth-- == 0) {
        out.add(arg.toString().strip());
        break;
      } else if (c == ',' && depth == 0) {
        out.add(arg.toString().strip());
        arg.setLength(0);
        continue;
      }
      arg.append(c);
    }
    // "String code, String message": a declaration, not a call.
    return out.stream().anyMatch(a -> a.matches("(int|long|String) \\w+")) ? List.of() : out;
  }

  private static String unquote(String literal) {
    return literal.substring(1, literal.length() - 1);
  }

  /** An engine event with placeholder components, for its {@code type()}. */
  private static RequestEvent sample(Class<?> type) throws ReflectiveOperationException {
    RecordComponent[] parts = type.getRecordComponents();
    Class<?>[] types = Stream.of(parts).map(RecordComponent::getType).toArray(Class<?>[]::new);
    Object[] values =
        Stream.of(types).map(t -> t == int.class ? (Object) 0 : null).toArray(Object[]::new);
    Constructor<?> c = type.getDeclaredConstructor(types);
    return (RequestEvent) c.newInstance(values);
  }

  private static JsonNode body(String path, String method) {
    return doc.path("paths").path(path).path(method).path("requestBody").path("content");
  }

  private static JsonNode schema(String name) {
    JsonNode s = doc.path("components").path("schemas").path(name);
    assertTrue(s.isObject(), "no schema " + name);
    return s;
  }

  private static Set<String> names(JsonNode schema) {
    Set<String> out = new TreeSet<>();
    schema.path("properties").fieldNames().forEachRemaining(out::add);
    return out;
  }

  private static Set<String> fieldNames(JsonNode o) {
    Set<String> out = new TreeSet<>();
    o.fieldNames().forEachRemaining(out::add);
    return out;
  }

  /** {@code o}'s fields are the schema's properties, and it has every required one. */
  private static void assertFields(String schemaName, JsonNode o) {
    JsonNode s = schema(schemaName);
    assertTrue(o.isObject(), schemaName + ": not an object: " + o);
    Set<String> documented = names(s);
    Set<String> required = new TreeSet<>();
    s.path("required").forEach(r -> required.add(r.asText()));
    Set<String> actual = fieldNames(o);
    assertTrue(
        documented.containsAll(actual),
        schemaName + ": undocumented fields " + minus(actual, documented) + " in " + o);
    assertTrue(
        actual.containsAll(required),
        schemaName + ": required fields missing " + minus(required, actual) + " in " + o);
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.removeAll(b);
    return out;
  }
}
