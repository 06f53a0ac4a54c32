"""The judgements the cluster service makes, one module each, every one holding both its LLM
path and its offline path behind one function, with its thresholds beside it:

- ``label.cluster_label``: a cluster's topic (the LLM's few words, or TF-IDF keywords);
- ``skill_draft.skill_draft``: the skill a cluster's members make — drafted, rendered as
  SKILL.md, held to the quality bar, verified claim by claim and scored;
- ``skill_gate``: whether a skill that passed may be published without a curator (its memories
  served in the open, its own text passing the poisoning screen), and why not.

``skill_synthesis`` is the offline draft; ``skill_text`` the sentence shapes it reads;
``skill_types`` the values they pass around. Nothing here builds a query or writes a row: the
services hand in what is read (the members, a sample to weigh keywords against, how to make a
slug unique) and file the outcome.
"""
