"""Live resources: subscriptions to sessions and projects, and the watcher that feeds them.

- `uris`: which `memory://` URIs can be followed, and the per-token grant check;
- `watcher`: the per-server task that compares marks of followed resources about once a
  second and notifies their followers (writes of any process on the database);
- `updates`: the MCP handlers (`resources/subscribe`, `unsubscribe`, `logging/setLevel`, a
  grant-checked `subscriptions/listen`) and the subscription bus.
"""

from server.live.updates import LiveUpdates

__all__ = ["LiveUpdates"]
