package dev.stepweave.server.store;

/**
 * A job's uploaded input file (a multipart {@code input_reference}), kept so that the job can be
 * run again after a restart.
 *
 * @param contentType the part's declared type, or null
 * @param fileName the part's file name ("" when none)
 * @param bytes the file as uploaded
 */
public record JobInput(String contentType, String fileName, byte[] bytes) {}
