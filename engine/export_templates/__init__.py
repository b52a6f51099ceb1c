"""The parts of an exported script (engine.export_script) as string.Template texts: each `$name`
is a setting, filled in where it is used, with a comment naming the setting it came from."""
