package dev.stepweave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/**
 * The BOM ({@code bom/pom.xml}, which has no parent so that it pins only Stepweave's artifacts)
 * lists every published module at the parent's version: it cannot drift from the build.
 */
class BomTest {
  static final Path ROOT = Path.of(System.getProperty("stepweave.golden")).getParent().getParent();

  /** Built and published but not a library: the benchmarks. */
  static final List<String> UNPUBLISHED = List.of("stepweave-bench");

  private static Document read(Path pom) throws Exception {
    return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
  }

  private static String child(Element e, String name) {
    for (var n = e.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element c && c.getTagName().equals(name)) {
        return c.getTextContent().strip();
      }
    }
    return null;
  }

  @Test
  void theBomListsEveryModuleAtTheParentsVersion() throws Exception {
    Document parent = read(ROOT.resolve("pom.xml"));
    String version = child(parent.getDocumentElement(), "version");
    List<String> modules = new ArrayList<>();
    var moduleNodes = parent.getElementsByTagName("module");
    for (int i = 0; i < moduleNodes.getLength(); i++) {
      String dir = moduleNodes.item(i).getTextContent().strip();
      if (dir.equals("bom")) {
        continue;
      }
      String artifact =
          child(read(ROOT.resolve(dir).resolve("pom.xml")).getDocumentElement(), "artifactId");
      if (!UNPUBLISHED.contains(artifact)) {
        modules.add(artifact);
      }
    }
    Element bom = read(ROOT.resolve("bom/pom.xml")).getDocumentElement();
    assertEquals(version, child(bom, "version"), "the BOM's version");
    assertEquals("dev.stepweave", child(bom, "groupId"));
    List<String> listed = new ArrayList<>();
    var deps = bom.getElementsByTagName("dependency");
    for (int i = 0; i < deps.getLength(); i++) {
      Element d = (Element) deps.item(i);
      assertEquals("dev.stepweave", child(d, "groupId"));
      assertEquals("${project.version}", child(d, "version"));
      listed.add(child(d, "artifactId"));
    }
    assertEquals(modules, listed, "the BOM lists the modules of the parent pom, in its order");
  }
}
