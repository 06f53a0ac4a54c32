"""Types the classifier is unsure of go to the review queue: the unsure rule, the upload's queue
item, a curator's decision (one row, in bulk, on the memory list) and its undo, and spaces."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from agents.models import Role
from memories.judgements.classify import UNSURE_MARGIN, classify, classify_decide
from memories.models import ChangeState, Memory, MemoryEdit, TypeChange
from memories.services import memory_upload
from memories.services.edit import memory_edit
from memories.services.types import TypeChangeError, memory_type_set, type_change_undo
from tests.spaces import curate_shared
from ultron_site.people import person_create

CLEAR = [
    ("Traceback: ModuleNotFoundError: No module named 'yaml' when running the deploy script. "
     "Fixed by pip install pyyaml.", "error"),
    ("SQL injection in the search endpoint: user input was concatenated into the query; use "
     "parameterised queries.", "security"),
    ("We went hiking at the lake on Sunday with the kids and the dog.", "life"),
]
# Short texts with nothing telling in them: the classifier's top two are close.
UNCLEAR = ["Use uv instead of pip.", "Notes about the build.",
           "运行 pip install 时报错：连接超时，配置代理后修复",  # an error the classifier reads as a correction
           "部署的最佳实践：先灰度发布再全量"]  # a pattern it reads as security, by a hair


@pytest.mark.parametrize(("text", "expected"), CLEAR)
def test_a_clear_text_is_decided_with_a_wide_margin(text, expected):
    decision = classify_decide(text, "", "")
    assert (decision.memory_type, decision.decided_by, decision.unsure) == (expected, "offline", False)
    assert decision.margin >= UNSURE_MARGIN and decision.runner_up not in (None, expected)
    assert classify(text, "", "") == expected  # the old signature answers the same type


@pytest.mark.parametrize("text", UNCLEAR)
def test_an_unclear_text_is_unsure_with_its_runner_up(text):
    decision = classify_decide(text, "", "")
    assert decision.unsure and 0 <= decision.margin < UNSURE_MARGIN
    assert decision.runner_up and decision.runner_up != decision.memory_type


def test_with_an_llm_its_type_is_kept_unless_it_fails(openai_llm, settings):
    settings.ULTRON_LLM_MAX_ATTEMPTS = 1
    openai_llm.script('{"memory_type": "life"}', "no JSON at all")
    decided = classify_decide(UNCLEAR[1], "", "")
    assert (decided.memory_type, decided.decided_by, decided.margin, decided.unsure) == ("life", "llm", None, False)
    fallen = classify_decide(UNCLEAR[1], "", "")  # the LLM failed: the offline decision and its doubt stand
    assert fallen.decided_by == "offline" and fallen.unsure


def _curator(username: str, space=None) -> Client:
    if space is None:
        person = person_create(username=username, role=Role.CURATOR, password_once=False)
        curate_shared(get_user_model().objects.get(username=username))
    else:
        person = person_create(username=username, role=Role.CURATOR, password_once=False, spaces=[(space, Role.CURATOR)])
    client = Client()
    client.force_login(get_user_model().objects.get(username=person.username))
    return client


@pytest.mark.django_db
def test_an_upload_queues_its_type_only_when_the_classifier_is_unsure():
    unsure = memory_upload(content=UNCLEAR[0])
    review = unsure.type_review
    assert review is not None and review.state == ChangeState.OPEN and review.space_id == unsure.memory.space_id
    assert review.chosen == unsure.memory.memory_type and review.runner_up and review.margin < UNSURE_MARGIN
    sure = memory_upload(content=CLEAR[0][0])
    assert sure.type_review is None and sure.memory.memory_type == "error"
    given = memory_upload(content=UNCLEAR[1], memory_type="pattern")  # the caller knew the type
    assert given.type_review is None and given.memory.memory_type == "pattern"
    assert list(TypeChange.objects.values_list("memory_id", flat=True)) == [unsure.memory.pk]


@pytest.mark.django_db
def test_a_curator_sets_a_queued_type_from_the_queue_and_undoes_it_from_the_memory_page():
    client = _curator("tess")
    result = memory_upload(content=UNCLEAR[0])
    memory, review = result.memory, result.type_review
    queue = reverse("admin:memories_memory_queue")
    assert f'href="{queue}?kind=type"' in client.get(reverse("admin:index")).content.decode()  # the dashboard's count
    page = client.get(queue + "?kind=type").content.decode()
    assert "Types to confirm (1)" in page and f'id="type-{review.pk}"' in page
    assert f"Keep {review.chosen}" in page and f"Set {review.runner_up}" in page and 'data-key="c"' in page
    url = reverse("admin:memories_memory_type_action", args=[review.pk, "set"])
    response = client.post(url, {"memory_type": review.runner_up}, HTTP_HX_REQUEST="true",
                           HTTP_HX_TARGET=f"type-{review.pk}")
    assert f"Set to {review.runner_up}" in response.content.decode()
    memory.refresh_from_db()
    assert memory.memory_type == review.runner_up
    assert "Types to confirm (0)" in client.get(queue).content.decode()
    edit = MemoryEdit.objects.get(memory=memory, action="type")
    assert edit.editor == "tess" and edit.after == {"memory_type": review.runner_up}
    assert f"the classifier chose {review.chosen}" in edit.note
    # The answered row cannot be answered twice.
    again = client.post(url, {"memory_type": "life", "next": queue}, follow=True).content.decode()
    assert "already decided" in again

    page_url = reverse("admin:memories_memory_change", args=[memory.pk])
    memory_page = client.get(page_url).content.decode()
    assert f"set to {review.runner_up} by tess" in memory_page and "Undo" in memory_page
    undo = reverse("admin:memories_memory_type_action", args=[review.pk, "undo"])
    response = client.post(undo, {"next": page_url})
    assert response.status_code == 302 and response["Location"] == page_url
    memory.refresh_from_db()
    review.refresh_from_db()
    assert memory.memory_type == review.chosen and (review.state, review.undone_by) == (ChangeState.UNDONE, "tess")
    assert MemoryEdit.objects.filter(memory=memory, action="type undone", editor="tess").exists()
    assert "undone by tess" in client.get(page_url).content.decode()
    # The classifier's doubt stands again: the memory is back in the queue, and "keep" settles it.
    reopened = TypeChange.objects.get(memory=memory, state=ChangeState.OPEN)
    client.post(reverse("admin:memories_memory_type_action", args=[reopened.pk, "set"]), {"memory_type": reopened.chosen})
    reopened.refresh_from_db()
    assert (reopened.state, reopened.memory_type) == (ChangeState.DONE, reopened.chosen)
    assert MemoryEdit.objects.filter(memory=memory, action="type confirmed").exists()


@pytest.mark.django_db
def test_a_type_changed_on_the_memory_page_can_be_undone_and_a_later_change_blocks_it():
    memory = memory_upload(content=CLEAR[0][0]).memory
    memory_edit(memory_id=memory.pk, editor="ed", content=memory.content, memory_type="pattern")
    change = TypeChange.objects.get(memory=memory)
    assert (change.state, change.chosen, change.memory_type, change.margin) == (ChangeState.DONE, "error", "pattern", None)
    later = memory_type_set(memory_id=memory.pk, memory_type="life", user="flo")
    with pytest.raises(TypeChangeError, match="changed since"):
        type_change_undo(change_id=change.pk, user="ed")
    type_change_undo(change_id=later.pk, user="ed")
    type_change_undo(change_id=change.pk, user="ed")
    assert Memory.objects.get(pk=memory.pk).memory_type == "error"
    assert not TypeChange.objects.filter(state=ChangeState.OPEN).exists()  # no doubt to reopen


@pytest.mark.django_db
def test_bulk_set_type_on_the_memory_list_and_on_the_queue():
    client = _curator("bea")
    first, second = (memory_upload(content=text) for text in UNCLEAR[:2])
    clear = memory_upload(content=CLEAR[2][0]).memory
    changelist = reverse("admin:memories_memory_changelist")
    selected = {"action": "set_type_selected", "_selected_action": [str(first.memory.pk), str(clear.pk)]}
    page = client.post(changelist, selected).content.decode()
    assert "Set the type of 2 memories" in page and 'name="memory_type"' in page
    response = client.post(changelist, {**selected, "memory_type": "security", "apply": "1"})
    assert response.status_code == 302
    assert {m.memory_type for m in Memory.objects.filter(pk__in=[first.memory.pk, clear.pk])} == {"security"}
    first.type_review.refresh_from_db()
    assert (first.type_review.state, first.type_review.decided_by) == (ChangeState.DONE, "bea")
    assert MemoryEdit.objects.filter(action="type", editor="bea").count() == 2

    queue = reverse("admin:memories_memory_queue")
    assert f'value="type:{second.type_review.pk}" form="queue-bulk"' in client.get(queue).content.decode()
    response = client.post(reverse("admin:memories_memory_queue_decide"), {
        "items": [f"type:{second.type_review.pk}", f"type:{first.type_review.pk}"], "action": "set-type",
        "memory_type": "life", "next": queue})
    assert response.status_code == 302 and response["Location"] == queue
    second.type_review.refresh_from_db()
    assert second.type_review.memory_type == "life" and Memory.objects.get(pk=second.memory.pk).memory_type == "life"
    assert Memory.objects.get(pk=first.memory.pk).memory_type == "security"  # decided already: left alone


@pytest.mark.django_db
def test_a_curator_of_another_space_never_sees_or_decides_its_type_reviews():
    from agents.services import space_create

    team_a, team_b = space_create(slug="team-a"), space_create(slug="team-b")
    result = memory_upload(content=UNCLEAR[0], space=team_a)
    review = result.type_review
    own = _curator("ann", team_a)
    assert f'id="type-{review.pk}"' in own.get(reverse("admin:memories_memory_queue")).content.decode()
    other = _curator("bob", team_b)
    page = other.get(reverse("admin:memories_memory_queue")).content.decode()
    assert "Types to confirm (0)" in page and f'id="type-{review.pk}"' not in page
    for action in ("set", "undo"):
        url = reverse("admin:memories_memory_type_action", args=[review.pk, action])
        assert other.post(url, {"memory_type": "life"}).status_code == 404
    other.post(reverse("admin:memories_memory_queue_decide"), {"items": [f"type:{review.pk}"], "action": "set-type",
                                                                "memory_type": "life"})
    review.refresh_from_db()
    assert review.state == ChangeState.OPEN and Memory.objects.get(pk=result.memory.pk).memory_type == review.chosen
