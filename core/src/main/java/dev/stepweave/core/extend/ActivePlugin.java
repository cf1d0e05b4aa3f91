package dev.stepweave.core.extend;

/** An enabled plugin a request turned on, with its validated parameters. */
public record ActivePlugin(Plugin plugin, PluginParams params) {
  public String id() {
    return plugin.id();
  }
}
