package dev.stepweave.core.runtime;

import dev.stepweave.core.memory.Reservation;
import dev.stepweave.tensor.Backend;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The preemption layer. Under {@link EngineConfig.Preemption#SERIALIZE_TO_HOST}, when a waiting
 * request does not fit, it suspends lower-priority running requests (lowest priority first, latest
 * admitted first) until it does: each is checkpointed at its step boundary to host memory, its
 * reservation released, and it goes back to the queue in its old place, to resume from that
 * checkpoint. It suspends nobody unless that makes enough room.
 */
final class Preemptor {
  private final EngineConfig.Preemption policy;
  private final AdmissionController admission;
  private final AtomicLong preempted = new AtomicLong();

  Preemptor(EngineConfig.Preemption policy, AdmissionController admission) {
    this.policy = policy;
    this.admission = admission;
  }

  /**
   * Makes room for {@code waiting} by suspending running requests of {@code loops} back into {@code
   * queue}, then reserves it.
   *
   * @return whether {@code waiting} is now reserved
   */
  boolean makeRoom(
      RequestScheduler.Entry<ProgramRun> waiting,
      LoopScheduler loops,
      java.util.function.Function<ProgramRun, RequestScheduler<ProgramRun>> queueOf,
      Supplier<Backend> backend) {
    if (policy != EngineConfig.Preemption.SERIALIZE_TO_HOST) {
      return false;
    }
    Reservation needed = waiting.item().reservation;
    List<ProgramRun> candidates =
        loops.running().reversed().stream()
            .filter(r -> r.entry().priority() < waiting.priority())
            .sorted(Comparator.comparingInt(r -> r.entry().priority()))
            .toList();
    List<String> released = new ArrayList<>();
    List<ProgramRun> victims = new ArrayList<>();
    for (ProgramRun r : candidates) {
      if (admission.fits(needed, released)) {
        break;
      }
      released.add(r.id());
      victims.add(r);
    }
    if (!admission.fits(needed, released)) {
      return false;
    }
    for (ProgramRun v : victims) {
      v.suspend(backend);
      loops.remove(v);
      admission.release(v.id());
      queueOf.apply(v).requeue(v.entry());
      preempted.incrementAndGet();
    }
    return admission.tryReserve(needed);
  }

  /** Requests suspended so far. */
  long preempted() {
    return preempted.get();
  }
}
