package dev.stepweave.training.autograd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stepweave.tensor.Backend;
import dev.stepweave.tensor.cpu.CpuBackend;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The recording backend computes what the CPU backend computes: every operation the CPU backend
 * implements itself, the recording backend overrides (delegating, with a rule); an SPI default it
 * leaves alone, the CPU backend leaves alone too — else the training forward would run the
 * default's composition where serving runs a kernel of its own, and stop being the serving forward.
 */
class RecordingBackendCoverageTest {
  @Test
  void everyOperationTheCpuBackendImplementsIsRecordedByDelegation() throws Exception {
    List<String> unrecorded = new ArrayList<>();
    int checked = 0;
    for (Method m : Backend.class.getMethods()) {
      if (Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      checked++;
      boolean cpuImplements =
          CpuBackend.class.getMethod(m.getName(), m.getParameterTypes()).getDeclaringClass()
              != Backend.class;
      boolean recorded =
          RecordingBackend.class.getMethod(m.getName(), m.getParameterTypes()).getDeclaringClass()
              == RecordingBackend.class;
      if (cpuImplements && !recorded) {
        unrecorded.add(m.getName());
      }
    }
    assertTrue(checked > 30, "the SPI's methods were enumerated");
    assertEquals(List.of(), unrecorded, "CPU operations the recording backend does not override");
  }
}
