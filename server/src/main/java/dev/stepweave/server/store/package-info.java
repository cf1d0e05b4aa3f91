/**
 * Where a server keeps what must outlive its process: job metadata (the request, status, progress,
 * error, timestamps, owner) and the index of artifact files. {@link
 * dev.stepweave.server.store.JobStore} is the interface; {@link
 * dev.stepweave.server.store.JobStores#open} gives the embedded SQLite store in the artifact
 * directory or the PostgreSQL store several replicas share. The schema is versioned and migrated
 * forward on open ({@link dev.stepweave.server.store.Migrations}).
 */
package dev.stepweave.server.store;
