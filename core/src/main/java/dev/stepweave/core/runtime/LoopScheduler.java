package dev.stepweave.core.runtime;

import dev.stepweave.core.loop.ModelInstance;
import dev.stepweave.core.loop.WorkPlan;
import dev.stepweave.core.request.CancelledException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Drives the loops of the admitted requests a step at a time: every tick, each running request, in
 * admission order, is asked for its next plan once — so every running loop advances one step per
 * tick, and none waits behind others however many arrive. Cancellation and deadlines take effect
 * here, at step boundaries.
 */
final class LoopScheduler {
  /** What one running request does this tick. */
  sealed interface Turn {
    ProgramRun run();
  }

  /** It wants this step run. */
  record Planned(ProgramRun run, WorkPlan plan) implements Turn {}

  /** Its program is done. */
  record Finished(ProgramRun run) implements Turn {}

  /** It stops: cancelled, past its deadline, or failed while planning. */
  record Stopped(ProgramRun run, RuntimeException why) implements Turn {}

  private final List<ProgramRun> running = new ArrayList<>();

  void add(ProgramRun run) {
    running.add(run);
  }

  void remove(ProgramRun run) {
    running.remove(run);
  }

  List<ProgramRun> running() {
    return List.copyOf(running);
  }

  int size() {
    return running.size();
  }

  boolean isEmpty() {
    return running.isEmpty();
  }

  /**
   * Each running request's turn this tick, in admission order, but for those {@code sitsOut} holds
   * for (they are not asked, so they neither step nor stop this tick).
   */
  List<Turn> collect(ModelInstance model, Instant now, Predicate<ProgramRun> sitsOut) {
    List<Turn> turns = new ArrayList<>(running.size());
    for (ProgramRun run : running) {
      if (!sitsOut.test(run)) {
        turns.add(turn(run, model, now));
      }
    }
    return turns;
  }

  private static Turn turn(ProgramRun run, ModelInstance model, Instant now) {
    if (run.options.deadline() != null && now.isAfter(run.options.deadline())) {
      return new Stopped(
          run,
          new DeadlineExceededException(
              run.options.deadline(),
              "after " + run.stepsDoneInLoop() + " steps of loop '" + run.currentLoop() + "'"));
    }
    try {
      WorkPlan plan = run.next(model);
      return plan == null ? new Finished(run) : new Planned(run, plan);
    } catch (CancelledException e) {
      return new Stopped(run, e);
    } catch (RuntimeException e) {
      return new Stopped(run, e);
    }
  }
}
