package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.SwappedComponents;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Two components, "a" and "b", that take turns on a {@link FakePool}: denoise step {@code i} of a
 * request needs the component its plan's letter {@code i} names ({@link #plan}); "a" is awake at
 * first. A step that runs while its component sleeps fails the test.
 */
final class FakeTurns implements SwappedComponents {
  private final Map<String, String> plans = new ConcurrentHashMap<>();
  final List<String> switches = Collections.synchronizedList(new ArrayList<>());
  private final double switchMillis;
  private final Runnable onSwitch;
  private volatile String awake = "a";

  /**
   * @param switchMillis the switch cost it predicts
   * @param onSwitch what a switch does besides (a test moves its clock)
   */
  FakeTurns(double switchMillis, Runnable onSwitch) {
    this.switchMillis = switchMillis;
    this.onSwitch = onSwitch;
  }

  /** The request of {@code prompt} needs {@code letters.charAt(i)} at denoise step i. */
  FakeTurns plan(String prompt, String letters) {
    plans.put(prompt, letters);
    return this;
  }

  /** The component denoise step {@code step} of {@code prompt} needs, if it has a plan. */
  Optional<String> needs(String prompt, int step) {
    String letters = plans.get(prompt);
    return letters == null ? Optional.empty() : Optional.of(letters.substring(step, step + 1));
  }

  /** Fails unless {@code component} is awake. */
  void requireAwake(String component) {
    if (!component.equals(awake)) {
      throw new AssertionError("a step of " + component + " ran while " + awake + " was awake");
    }
  }

  @Override
  public List<String> components() {
    return List.of("a", "b");
  }

  @Override
  public Set<String> poolTags() {
    return Set.of("fake/a", "fake/b");
  }

  @Override
  public Optional<String> awake() {
    return Optional.of(awake);
  }

  @Override
  public double switchMillis() {
    return switchMillis;
  }

  @Override
  public void switchTo(String component) {
    switches.add(component);
    onSwitch.run();
    awake = component;
  }
}
