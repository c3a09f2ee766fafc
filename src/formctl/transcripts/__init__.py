"""Transcripts: recorded conversations, replayed in CI as regression tests of a form.

- :mod:`.format` — the TOML file (``format = 1``): read, write, clear errors naming the line.
- :mod:`.normalise` — what varies between two runs (ids, times, the subject) and masking
  of ``sensitive=True`` fields.
- :mod:`.record` — :class:`~formctl.transcripts.record.Recorder`, fed the chat loop's events.
- :mod:`.replay` — exact and live replay (``replay_file``), the comparison, ``--update``.
- :mod:`.diff` — differences a form author reads at a glance (``fields[mileage].status``).
- :mod:`.coverage` — steps, fields, gates, checkpoints and effects the transcripts exercised.
- :mod:`.cli` — ``formctl replay``; :mod:`.pytest_plugin` — each transcript a pytest item.

Nothing is imported here, so ``formctl`` start-up and pytest's plugin loading stay cheap.
"""
