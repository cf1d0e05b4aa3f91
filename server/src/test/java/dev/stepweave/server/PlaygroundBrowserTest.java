package dev.stepweave.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.extend.AdapterRegistry;
import dev.stepweave.core.extend.Extensions;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.logging.LogEntry;
import org.openqa.selenium.logging.LogType;
import org.openqa.selenium.logging.LoggingPreferences;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The playground at {@code /} in headless Chromium, driven by Selenium: create → live progress and
 * previews → play → seek, cancel, a refused input shown inline, an image upload to an
 * image-to-video card, and the key prompt of a server with API keys. Chromium and chromedriver are
 * Debian's ({@code .ci/run} installs them); without them the tests skip, unless {@code
 * STEPWEAVE_REQUIRE_BROWSER=1} (set by {@code .ci/run}) makes that a failure. Each state is saved
 * as a PNG under {@code target/playground} (the copies in {@code docs/playground} come from there).
 */
@Timeout(120)
class PlaygroundBrowserTest {
  private static final Path CHROMIUM =
      Path.of(System.getenv().getOrDefault("STEPWEAVE_CHROMIUM", "/usr/bin/chromium"));
  private static final Path CHROMEDRIVER =
      Path.of(System.getenv().getOrDefault("STEPWEAVE_CHROMEDRIVER", "/usr/bin/chromedriver"));
  private static final Path SHOTS = Path.of("target", "playground");
  private static final String KEY = "sk-playground-test-0123456789abcdef";

  /** Held: Selenium's own warnings (no CDP bindings for this Chromium; none are used) silenced. */
  private static final java.util.logging.Logger SELENIUM_LOG =
      java.util.logging.Logger.getLogger("org.openqa.selenium");

  private static WebDriver browser;

  @TempDir Path tmp;
  private Harness server;

  @BeforeAll
  static void startBrowser() throws IOException {
    boolean present = Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
    if (!present) {
      String missing =
          "no " + CHROMIUM + " or " + CHROMEDRIVER + " (apt-get install chromium chromium-driver)";
      if ("1".equals(System.getenv("STEPWEAVE_REQUIRE_BROWSER"))) {
        fail(missing + ", and STEPWEAVE_REQUIRE_BROWSER=1");
      }
      Assumptions.abort(missing);
    }
    SELENIUM_LOG.setLevel(Level.SEVERE);
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments(
        "--headless=new",
        "--no-sandbox", // CI runs as root, where Chromium's sandbox refuses to start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=960,900",
        "--autoplay-policy=no-user-gesture-required");
    LoggingPreferences logs = new LoggingPreferences();
    logs.enable(LogType.BROWSER, Level.ALL);
    options.setCapability("goog:loggingPrefs", logs);
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile()).build();
    browser = new ChromeDriver(service, options);
    Files.createDirectories(SHOTS);
  }

  @AfterAll
  static void stopBrowser() {
    if (browser != null) {
      browser.quit();
    }
  }

  @AfterEach
  void stopServer() {
    if (browser != null) {
      // No script error and no Content-Security-Policy refusal in any state of the page.
      List<String> problems =
          browser.manage().logs().get(LogType.BROWSER).getAll().stream()
              .map(LogEntry::getMessage)
              .filter(m -> m.contains("Content Security Policy") || m.contains("Uncaught"))
              .toList();
      assertEquals(List.of(), problems, "the page's console");
      browser.get("about:blank");
    }
    if (server != null) {
      server.close();
    }
  }

  private void open(Harness h) {
    server = h;
    browser.get(h.server.baseUri() + "/");
  }

  @Test
  void createShowsProgressAndPreviewsThenPlaysAndSeeks() throws IOException {
    open(new Harness(tmp.resolve("a")));
    WebElement prompt = visible(By.id("prompt"));
    assertFalse(
        browser.findElement(By.id("image-field")).isDisplayed(),
        "a text-to-video card offers no image upload");
    assertEquals("32x32", browser.findElement(By.id("size")).getAttribute("placeholder"));
    prompt.sendKeys("a paced red ball");
    type("length", "17"); // 2 s at the card's 8 fps
    type("num_inference_steps", "12");
    type("seed", "7");
    browser.findElement(By.id("submit")).click();

    wait(10).until(d -> text("progress-text").contains("denoise: step "));
    wait(10).until(d -> browser.findElement(By.id("preview")).isDisplayed());
    double progress = number("return document.getElementById('progress').value");
    assertTrue(progress > 0 && progress < 1, "the bar moved part of the way: " + progress);
    assertTrue(text("progress-text").contains("ETA"), text("progress-text"));
    assertTrue(
        browser
            .findElement(By.id("preview"))
            .getAttribute("src")
            .startsWith("data:image/jpeg;base64,"));
    shot("progress");

    wait(30).until(d -> "completed".equals(status()));
    wait(15).until(d -> number("return document.getElementById('video').readyState") >= 1);
    double duration = number("return document.getElementById('video').duration");
    assertEquals(17 / 8.0, duration, 0.2, "the clip's length");
    // Seekable to the end only when the server answers ranges; then jump to 1.5 s.
    assertEquals(
        duration,
        number(
            "const v = document.getElementById('video'); return v.seekable.end(v.seekable.length - 1)"),
        0.2);
    ((JavascriptExecutor) browser)
        .executeScript(
            "const v = document.getElementById('video'); v.pause();"
                + " v.addEventListener('seeked', () => v.dataset.seeked = v.currentTime, {once: true});"
                + " v.currentTime = 1.5;");
    wait(10).until(d -> browser.findElement(By.id("video")).getAttribute("data-seeked") != null);
    assertEquals(
        1.5, number("return Number(document.getElementById('video').dataset.seeked)"), 0.13);
    ((JavascriptExecutor) browser).executeScript("document.getElementById('video').play()");
    wait(10).until(d -> number("return document.getElementById('video').currentTime") > 1.6);

    String id = text("job-id");
    String href = browser.findElement(By.id("download")).getAttribute("href");
    assertTrue(href.endsWith("/v1/videos/" + id + "/content"), href);
    assertEquals(id + ".mp4", browser.findElement(By.id("download")).getAttribute("download"));
    WebElement row = wait(5).until(d -> historyRow(id));
    assertEquals("completed", row.getAttribute("data-status"));
    shot("completed");
  }

  @Test
  void cancelStopsTheJobAndItLeavesTheHistory() throws IOException {
    open(new Harness(tmp.resolve("a")));
    visible(By.id("prompt")).sendKeys("a paced slow boat");
    type("num_inference_steps", "80");
    browser.findElement(By.id("submit")).click();
    wait(10).until(d -> text("progress-text").contains("step 2 /"));
    String id = text("job-id");
    assertTrue(historyRow(id) != null || wait(5).until(d -> historyRow(id)) != null);
    browser.findElement(By.id("cancel")).click();
    wait(10).until(d -> "cancelled".equals(status()));
    assertFalse(browser.findElement(By.id("cancel")).isDisplayed(), "nothing left to cancel");
    assertEquals(404, server.get("/v1/videos/" + id).status(), "the job is gone for clients");
    wait(10).until(d -> historyRow(id) == null);
    shot("cancelled");
  }

  @Test
  void aRefusedInputIsShownInlineOnItsField() throws IOException {
    open(new Harness(tmp.resolve("a")));
    visible(By.id("prompt")).sendKeys("a red ball");
    type("size", "33x33");
    browser.findElement(By.id("submit")).click();
    WebElement error =
        wait(10).until(ExpectedConditions.visibilityOfElementLocated(By.id("error")));
    String expected =
        server
            .postJson("/v1/videos", Map.of("prompt", "a red ball", "size", "33x33"))
            .json()
            .path("error")
            .path("message")
            .asText();
    assertEquals(expected + " (size) [invalid_value]", error.getText());
    assertEquals("size", error.getAttribute("data-param"));
    assertTrue(browser.findElement(By.id("size")).getAttribute("class").contains("invalid"));
    assertEquals(0, server.get("/v1/videos").json().path("data").size(), "nothing was queued");
    shot("error");

    // Seconds instead of frames: the same field carries the other unit, and its refusal too.
    type("size", "");
    new Select(browser.findElement(By.id("length-unit"))).selectByValue("seconds");
    type("length", "-1");
    browser.findElement(By.id("submit")).click();
    wait(10)
        .until(
            d -> "seconds".equals(browser.findElement(By.id("error")).getAttribute("data-param")));
    assertTrue(browser.findElement(By.id("length")).getAttribute("class").contains("invalid"));
  }

  @Test
  void anImageUploadStartsAnImageToVideoJob() throws IOException, NoSuchAlgorithmException {
    PatternModel i2v = PatternModel.serving("pattern-i2v", TaskType.I2V);
    open(new Harness(tmp.resolve("a"), ServerConfig.defaults(), Extensions.NONE, i2v));
    visible(By.id("prompt")).sendKeys("a paper boat drifts");
    WebElement upload = browser.findElement(By.id("input_reference"));
    assertTrue(upload.isDisplayed(), "an image-to-video card offers the upload");
    byte[] png = InputReferenceApiTest.image("png", 32, 32, 200);
    Path file = tmp.resolve("boat.png");
    Files.write(file, png);
    upload.sendKeys(file.toAbsolutePath().toString());
    browser.findElement(By.id("submit")).click();
    wait(30).until(d -> "completed".equals(status()));
    JsonNode video = server.get("/v1/videos/" + text("job-id")).json();
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(png));
    assertEquals("i2v", video.path("task").asText());
    assertEquals(sha, video.path("input_reference").path("sha256").asText());
    assertEquals(List.of(sha), i2v.receivedImages(), "the model started from the uploaded image");
    wait(15).until(d -> number("return document.getElementById('video').readyState") >= 1);
    shot("image-to-video");
  }

  @Test
  void theDeploymentsCachesAndAdaptersReachTheJob() throws IOException {
    Path loras = Files.createDirectories(tmp.resolve("loras"));
    LoraApiTest.adapter(loras.resolve("style.safetensors"), 2, "blocks.0.attn.to_q");
    Extensions deployment =
        Extensions.builder()
            .enable(PatternModel.CACHE)
            .adapters(
                AdapterRegistry.open(new PatternModel()::inspectAdapter, Map.of(), List.of(loras)))
            .build();
    open(new Harness(tmp.resolve("a"), ServerConfig.defaults(), deployment));
    visible(By.id("prompt")).sendKeys("a red ball, cached and styled");
    browser.findElement(By.id("cache-patterncache")).click();
    browser.findElement(By.id("lora-style")).click();
    type("lora-scale-style", "0.5");
    shot("caches-and-adapters");
    browser.findElement(By.id("submit")).click();
    wait(30).until(d -> "completed".equals(status()));
    JsonNode video = server.get("/v1/videos/" + text("job-id")).json();
    assertTrue(video.path("cache").has("patterncache"), video.toString());
    assertEquals("style", video.path("loras").path(0).path("name").asText());
    assertEquals(0.5, video.path("loras").path(0).path("scale").asDouble());
  }

  @Test
  void aServerWithKeysAsksForOneAndUsesIt() throws IOException {
    Path keys = tmp.resolve("keys.txt");
    Files.writeString(keys, KEY + " team\n");
    open(new Harness(tmp.resolve("a"), new HttpConfig.Builder().apiKeyFile(keys).build()));
    WebElement input = visible(By.id("api-key"));
    assertFalse(browser.findElement(By.id("app")).isDisplayed(), "nothing works without a key");
    input.sendKeys("sk-wrong-key-0000000000000000");
    browser.findElement(By.id("key-save")).click();
    wait(10).until(d -> text("key-error").equals("the API key is not valid"));
    shot("key-prompt");
    input.clear();
    input.sendKeys(KEY);
    browser.findElement(By.id("key-save")).click();
    visible(By.id("prompt")).sendKeys("a red ball with a key");
    browser.findElement(By.id("submit")).click();
    wait(30).until(d -> "completed".equals(status()));
    // The video element cannot send the key: the page fetched the file with it.
    wait(15).until(d -> number("return document.getElementById('video').readyState") >= 1);
    assertTrue(browser.findElement(By.id("video")).getAttribute("src").startsWith("blob:"));
    assertTrue(historyRow(text("job-id")) != null);
    browser.findElement(By.id("forget-key")).click();
    visible(By.id("api-key"));
  }

  private static WebDriverWait wait(int seconds) {
    return new WebDriverWait(browser, Duration.ofSeconds(seconds), Duration.ofMillis(50));
  }

  private static WebElement visible(By by) {
    return wait(10).until(ExpectedConditions.visibilityOfElementLocated(by));
  }

  private static void type(String id, String text) {
    WebElement e = browser.findElement(By.id(id));
    e.clear();
    e.sendKeys(text);
  }

  private static String text(String id) {
    return browser.findElement(By.id(id)).getText();
  }

  private static String status() {
    return browser.findElement(By.id("job-status")).getAttribute("data-status");
  }

  private static double number(String script) {
    Object v = ((JavascriptExecutor) browser).executeScript(script);
    return v == null ? Double.NaN : ((Number) v).doubleValue();
  }

  private static WebElement historyRow(String id) {
    List<WebElement> rows =
        browser.findElements(By.cssSelector("#history tr[data-id='" + id + "']"));
    return rows.isEmpty() ? null : rows.getFirst();
  }

  /** The window as a PNG, cut below the page's last row that is not plain background. */
  private static void shot(String name) throws IOException {
    byte[] png = ((ChromeDriver) browser).getScreenshotAs(OutputType.BYTES);
    BufferedImage window = ImageIO.read(new ByteArrayInputStream(png));
    int background = window.getRGB(window.getWidth() - 1, window.getHeight() - 1);
    int bottom = window.getHeight();
    while (bottom > 1 && plainRow(window, bottom - 1, background)) {
      bottom--;
    }
    int cut = Math.min(window.getHeight(), bottom + 16);
    ImageIO.write(
        window.getSubimage(0, 0, window.getWidth(), cut),
        "png",
        SHOTS.resolve(name + ".png").toFile());
  }

  private static boolean plainRow(BufferedImage image, int y, int background) {
    // The scroll bar's column at the right edge is not page content.
    for (int x = 0; x < image.getWidth() - 20; x++) {
      if (image.getRGB(x, y) != background) {
        return false;
      }
    }
    return true;
  }
}
