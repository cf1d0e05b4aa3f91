package dev.stepweave.core.loop;

import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Components of a model instance that take turns on the device because it cannot hold them all
 * awake (Wan2.2 A14B's two experts on a GPU too small for both): at most one of them is awake, and
 * before a call that needs another runs ({@link WorkCall#awakeComponent}) the awake one sleeps and
 * the other wakes. A switch costs device time (parking one component's weights in host memory and
 * restoring another's), so the engine orders work to switch rarely and switches between calls, on
 * its scheduler thread, where a call's measured time does not include it.
 */
public interface SwappedComponents {

  /** The components that take turns, by the ids calls name them by. */
  List<String> components();

  /**
   * The tags of their weight pools on the backend ({@link
   * dev.stepweave.tensor.ComponentMemory#component}): memory accounting counts only the largest of
   * them awake.
   */
  Set<String> poolTags();

  /** The component awake now; empty when none is. */
  Optional<String> awake();

  /**
   * The predicted device time of one switch, in milliseconds: one component to sleep, one awake.
   */
  double switchMillis();

  /**
   * Makes {@code component} the awake one, the one awake before sleeping first, so that the two are
   * never awake together; nothing when it is awake already.
   *
   * @throws IllegalArgumentException when {@code component} is not one of {@link #components}
   */
  void switchTo(String component);
}
