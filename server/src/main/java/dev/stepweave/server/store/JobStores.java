package dev.stepweave.server.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import java.nio.file.Path;

/** Opens the store a server runs on. */
public final class JobStores {
  /** The embedded database's file in the artifact directory. */
  public static final String SQLITE_FILE = "stepweave.db";

  private JobStores() {}

  /**
   * The PostgreSQL store at {@code jdbcUrl} ({@code jdbc:postgresql://…}) when given, else the
   * embedded SQLite store in {@code artifactDir}; either is migrated to {@link Migrations#CURRENT}.
   *
   * @throws StoreException when the database cannot be opened or is newer than this build
   */
  public static JobStore open(String jdbcUrl, Path artifactDir) {
    return jdbcUrl == null ? sqlite(artifactDir, Migrations.CURRENT) : postgres(jdbcUrl);
  }

  /** The embedded store, migrated only to {@code version} (tests make old databases with it). */
  static JobStore sqlite(Path artifactDir, int version) {
    Path file = artifactDir.resolve(SQLITE_FILE);
    Dialect dialect = new Dialect.Sqlite();
    return new JdbcJobStore(
        connect("jdbc:sqlite:" + file, file.toString(), dialect),
        dialect,
        file.toString(),
        version);
  }

  /**
   * @throws IllegalArgumentException unless {@code jdbcUrl} is a PostgreSQL JDBC URL
   */
  public static void checkUrl(String jdbcUrl) {
    if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException(
          "--store must be a jdbc:postgresql:// URL, got '" + redacted(jdbcUrl) + "'");
    }
  }

  static JobStore postgres(String jdbcUrl) {
    checkUrl(jdbcUrl);
    String name = redacted(jdbcUrl);
    Dialect dialect = new Dialect.Postgres();
    return new JdbcJobStore(connect(jdbcUrl, name, dialect), dialect, name, Migrations.CURRENT);
  }

  /**
   * The pool of {@code url}'s connections: {@link Dialect#connections} of them, validated when
   * taken after sitting idle, waiting at most {@link #CONNECT_TIMEOUT_MS} for one (a call then
   * fails rather than hang while the database is away), and a first connection made at once (a
   * database that is not there stops the start).
   */
  private static HikariDataSource connect(String url, String name, Dialect dialect) {
    HikariConfig c = new HikariConfig();
    c.setJdbcUrl(url);
    c.setPoolName("stepweave-store");
    c.setMaximumPoolSize(dialect.connections());
    c.setMinimumIdle(1);
    c.setConnectionTimeout(CONNECT_TIMEOUT_MS);
    c.setValidationTimeout(Math.min(CONNECT_TIMEOUT_MS, 3_000));
    dialect.connectionProperties().forEach(c::addDataSourceProperty);
    try {
      return new HikariDataSource(c);
    } catch (HikariPool.PoolInitializationException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new StoreException(
          "cannot open the job store " + name + ": " + cause.getMessage(), cause);
    }
  }

  /** How long a store call waits for a connection. */
  static final long CONNECT_TIMEOUT_MS = 5_000;

  /** The URL without its query (where a password may be), for messages. */
  private static String redacted(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q) + "?…";
  }
}
