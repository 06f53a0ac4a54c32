"""The judgements the memory service makes about a memory's text, one module each, every one
holding both its LLM path and its offline path behind one function:

- ``classify.classify``: the memory type;
- ``summarize.summarize``: the L0 sentence and L1 overview;
- ``same_subject.details_conflict`` / ``same_subject.same_subject``: whether two near
  memories are one;
- ``merge.merge``: one memory written from a memory and its duplicates.

Everything passed to a judgement has already been redacted.
"""
