"""Pure parsers: text in, frozen dataclasses (or plain values) out. No I/O here."""
