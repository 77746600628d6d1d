"""How the book is built: executing chapters with papermill (`runner`, the command, with `planning`, `schedule` and
`execute`), cache keys (`cache`), editions and their HTML (`folders`, `staging`, `publishing`), the parameter reference,
exercises and launch buttons. What the chapters themselves call is in `lib.book`."""
