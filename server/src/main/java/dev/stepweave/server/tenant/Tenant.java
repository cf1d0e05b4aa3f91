package dev.stepweave.server.tenant;

/**
 * Who a call acts for: the API key it presented, known by a digest of the key (never the key
 * itself, so it can be logged and stored) and the label the key file gives it.
 *
 * @param id the first 16 hex digits of the key's SHA-256; the owner of the jobs the key creates
 * @param label the key file's label ("admin" for the admin key), or the id when the line has none
 * @param admin whether the key may see metrics detail, drain the server and rescan adapters
 */
public record Tenant(String id, String label, boolean admin) {
  /** The label that makes a key the admin key. */
  public static final String ADMIN_LABEL = "admin";

  /** The one tenant of a server without API keys: every caller, with every right. */
  public static final Tenant ANONYMOUS = new Tenant("", "anonymous", true);

  public boolean anonymous() {
    return id.isEmpty();
  }
}
