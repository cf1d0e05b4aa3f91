package dev.stepweave.tensor;

/** Where a tensor's storage lives. */
public record Device(Kind kind, int index) {

  /** Device families; a backend serves one kind. */
  public enum Kind {
    CPU,
    CUDA
  }

  public static final Device CPU = new Device(Kind.CPU, 0);

  public static Device cuda(int index) {
    return new Device(Kind.CUDA, index);
  }

  @Override
  public String toString() {
    return kind == Kind.CPU ? "cpu" : "cuda:" + index;
  }
}
