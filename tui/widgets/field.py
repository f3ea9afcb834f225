"""OrderedInput: an Input that applies the keys of one burst in the order they were typed.

Textual runs an Input's own keys (backspace, delete, the arrows, home, end: its bindings) only once the key event
has bubbled up to the app, through each parent's message queue, behind what the screen has queued (a filter's or
the what-fits pane's recomputation), while a character after it goes into the field at once. Keys that reach the
app in one read of the terminal (typed fast with both cores busy, or a burst of them) were then applied out of
order: '500K', four backspaces and '1Gi' left 'Gi' or nothing. This field runs its own keys where they arrive."""
from __future__ import annotations

from textual import events
from textual.widgets import Input


class OrderedInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)
