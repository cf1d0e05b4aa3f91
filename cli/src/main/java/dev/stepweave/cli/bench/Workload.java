package dev.stepweave.cli.bench;

import dev.stepweave.core.card.TaskType;
import dev.stepweave.core.request.DiffusionParams;
import dev.stepweave.core.request.Request;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;

/**
 * A deterministic list of requests for one mix: the same mix, count and seed give the same prompts,
 * seeds, sizes, frame counts and step counts on every machine.
 *
 * <p>Sizes are few on purpose: a serving fleet sees a handful of standard sizes, and only requests
 * of one latent shape can share a batched step. Step counts vary freely (each batch row carries its
 * own timestep), so requests at different points of their loops still batch.
 */
public record Workload(Mix mix, List<Request> requests) {
  private static final String[] SUBJECTS = {
    "a red fox", "a paper boat", "an old lighthouse", "a hummingbird", "a city tram", "a snowy owl"
  };
  private static final String[] SCENES = {
    "at dawn", "in the rain", "on a windy hill", "under neon lights", "by a quiet lake", "in fog"
  };
  // Image sizes weighted 2:1 towards the square one; videos are short (4k+1 frames for the VAE).
  private static final int[][] IMAGE_SIZES = {{64, 64}, {64, 64}, {96, 64}};
  private static final int[] IMAGE_STEPS = {4, 6, 8};
  private static final int[] VIDEO_FRAMES = {5, 9};
  private static final int[] VIDEO_STEPS = {4, 6};
  private static final int VIDEO_SIZE = 64;
  private static final int FPS = 8;
  private static final double GUIDANCE = 5.0;

  public Workload {
    requests = List.copyOf(requests);
  }

  /** {@code n} requests of the mix, ids {@code prefix-0 …}, drawn from {@code seed}. */
  public static Workload generate(Mix mix, int n, long seed, String prefix) {
    if (n < 1) {
      throw new IllegalArgumentException("a workload needs at least one request, got " + n);
    }
    Random rnd = new Random(seed);
    List<Boolean> isImage = new ArrayList<>();
    int images = mix.imageCount(n);
    for (int i = 0; i < n; i++) {
      isImage.add(i < images);
    }
    Collections.shuffle(isImage, rnd);
    List<Request> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String prompt = pick(SUBJECTS, rnd) + " " + pick(SCENES, rnd);
      long requestSeed = rnd.nextInt(1 << 30);
      DiffusionParams params;
      if (isImage.get(i)) {
        int[] wh = IMAGE_SIZES[rnd.nextInt(IMAGE_SIZES.length)];
        params = params(pick(IMAGE_STEPS, rnd), requestSeed, wh[0], wh[1], 1);
      } else {
        int frames = pick(VIDEO_FRAMES, rnd);
        params = params(pick(VIDEO_STEPS, rnd), requestSeed, VIDEO_SIZE, VIDEO_SIZE, frames);
      }
      out.add(
          Request.builder(params.frames() == 1 ? TaskType.T2I : TaskType.T2V, params)
              .id(prefix + "-" + i)
              .prompt(prompt)
              .build());
    }
    return new Workload(mix, out);
  }

  /** Denoising steps over all requests: the DiT work units the workload asks for. */
  public int totalSteps() {
    return requests.stream().mapToInt(r -> r.params().steps()).sum();
  }

  /** How many requests are one-frame images. */
  public long imageCount() {
    return requests.stream().filter(r -> r.params().frames() == 1).count();
  }

  private static DiffusionParams params(int steps, long seed, int width, int height, int frames) {
    return new DiffusionParams(
        steps, GUIDANCE, seed, width, height, frames, FPS, "", Optional.empty(), Optional.empty());
  }

  private static String pick(String[] options, Random rnd) {
    return options[rnd.nextInt(options.length)];
  }

  private static int pick(int[] options, Random rnd) {
    return options[rnd.nextInt(options.length)];
  }
}
