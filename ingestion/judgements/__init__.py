"""The judgements ingestion makes about a session, each holding its LLM path and its offline
path: ``score`` (how much reusable experience a segment holds) and ``extract`` (the memories
it holds). ``cues`` has what the offline paths read in a transcript. Segmentation, the third
judgement, lives in ``ingestion.segmentation``."""
