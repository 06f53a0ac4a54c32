"""The judgements the cluster service makes, one module each, every one holding both its LLM
path and its offline path behind one function, with its thresholds beside it:

- ``skill_draft.skill_draft``: the skill a cluster's members make — drafted, rendered as
  SKILL.md, held to the quality bar, verified claim by claim and scored.

``skill_synthesis`` is the offline draft; ``skill_text`` the sentence shapes it reads;
``skill_types`` the values they pass around. Nothing here reads or writes the database: the
services load the members and file the outcome.
"""
