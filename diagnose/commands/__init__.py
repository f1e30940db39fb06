"""The subcommands, above the domain: each module is one click command (or group); ``common`` holds what
they share (exit codes, language, width, writing outputs)."""
