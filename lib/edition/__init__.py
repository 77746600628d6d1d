"""How the book is built: chapter sources and their parameters cells (`sources`), profiles, executing chapters with
papermill (`runner`), cache keys (`cache`), editions and their HTML (`edition`), the parameter reference, exercises and
launch buttons. What the chapters themselves call is in `lib.book`."""
