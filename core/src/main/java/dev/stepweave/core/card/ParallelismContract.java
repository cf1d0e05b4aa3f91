package dev.stepweave.core.card;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * How the card may be spread over devices. A model instance names the plan it runs as {@code
 * "single"} (one device) or as {@code axis=degree} pairs joined by commas ({@code
 * "sequence=2,cfg=2"}); {@link #check} holds that plan to this contract when an engine takes the
 * instance, so a plan the card does not allow fails at load, never halfway through a request.
 *
 * @param axes the parallel axes the model supports ("sequence", "cfg")
 * @param maxSequenceParallel the largest sequence-parallel degree (attention heads bound it)
 */
public record ParallelismContract(Set<String> axes, int maxSequenceParallel) {
  /** The plan of an instance on one device. */
  public static final String SINGLE = "single";

  /** CFG parallelism splits the two guidance branches: more than two devices have nothing to do. */
  private static final int MAX_CFG_PARALLEL = 2;

  public ParallelismContract {
    axes = Set.copyOf(axes);
    if (maxSequenceParallel < 1) {
      throw new IllegalArgumentException("maxSequenceParallel must be >= 1");
    }
  }

  public static ParallelismContract single() {
    return new ParallelismContract(Set.of(), 1);
  }

  /**
   * Checks the plan an instance runs.
   *
   * @param where the card's model id, for the message
   * @throws InvalidCardException naming the plan and what the contract allows
   */
  public void check(String plan, String where) {
    List<CardProblem> problems = problems(plan);
    if (!problems.isEmpty()) {
      throw new InvalidCardException(where, problems);
    }
  }

  /** Every way {@code plan} breaks this contract, empty when it keeps it. */
  public List<CardProblem> problems(String plan) {
    List<CardProblem> out = new ArrayList<>();
    if (plan.equals(SINGLE)) {
      return out;
    }
    Set<String> seen = new HashSet<>();
    for (String part : plan.split(",", -1)) {
      String[] axisDegree = part.strip().split("=", -1);
      Integer degree = axisDegree.length == 2 ? degree(axisDegree[1]) : null;
      if (degree == null) {
        out.add(problem(plan, "has '" + part + "', which is not axis=degree"));
        continue;
      }
      String axis = axisDegree[0].strip();
      if (!seen.add(axis)) {
        out.add(problem(plan, "names axis '" + axis + "' twice"));
      } else if (degree > 1 && !axes.contains(axis)) {
        // A degree-one axis is a trivial group: any card runs it.
        out.add(problem(plan, "spreads over axis '" + axis + "', which the card does not support"));
      } else if (axis.equals("sequence") && degree > maxSequenceParallel) {
        out.add(problem(plan, "sequence degree " + degree + " exceeds " + maxSequenceParallel));
      } else if (axis.equals("cfg") && degree > MAX_CFG_PARALLEL) {
        out.add(problem(plan, "cfg degree " + degree + " exceeds " + MAX_CFG_PARALLEL));
      }
    }
    return out;
  }

  private CardProblem problem(String plan, String what) {
    return new CardProblem(
        CardProblem.Code.UNSUPPORTED_PARALLEL_PLAN,
        "parallel plan '"
            + plan
            + "' "
            + what
            + " (the card allows axes "
            + new TreeSet<>(axes)
            + ", sequence up to "
            + maxSequenceParallel
            + ")");
  }

  /** A degree of 1 or more, or null. */
  private static Integer degree(String text) {
    try {
      int d = Integer.parseInt(text.strip());
      return d >= 1 ? d : null;
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
