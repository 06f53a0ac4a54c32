"""The judgements ingestion makes about a session, each holding its LLM path and its offline
path beside its thresholds: ``segmentation`` (where one task ends and the next begins),
``score`` (how much reusable experience a segment holds) and ``extract`` (the memories it
holds). ``cues``, ``chains``, ``lessons`` and ``commands`` are what the offline paths read in a
transcript."""
