package dev.stepweave.server.store;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

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
    return new JdbcJobStore(
        connect("jdbc:sqlite:" + file, file.toString()),
        new Dialect.Sqlite(),
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
    return new JdbcJobStore(
        connect(jdbcUrl, name), new Dialect.Postgres(), name, Migrations.CURRENT);
  }

  private static Connection connect(String url, String name) {
    try {
      return DriverManager.getConnection(url);
    } catch (SQLException e) {
      throw new StoreException("cannot open the job store " + name + ": " + e.getMessage(), e);
    }
  }

  /** The URL without its query (where a password may be), for messages. */
  private static String redacted(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q) + "?…";
  }
}
