package dev.stepweave.training.data;

/**
 * One line of a dataset folder's {@code captions.jsonl}.
 *
 * @param id unique within the folder
 * @param caption the text the clip is conditioned on
 * @param media the clip, relative to the folder: a directory of PNG frames (taken in name order),
 *     an H.264 MP4, or one image (PNG, JPEG or WebP) as a single frame
 */
public record DatasetEntry(String id, String caption, String media) {}
