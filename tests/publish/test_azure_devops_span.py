"""An Azure DevOps thread spans its finding's lines whole: `rightFileEnd` is the end of the
last line (the column after its last character), not its first character."""

from __future__ import annotations

from reviewflow.publish.azure_devops.client import AzureDevOpsClient
from reviewflow.publish.comments import new_comment
from tests.publish.fake_azure_devops import TOKEN, FakeAzureDevOps
from tests.publish.memory import finding

REPO = "Fabrikam Fiber/app"
NUMBER = 7
APP = "src/app.py"
CODE = "def total(a, b):\n    value = a + b\n    return valeu  # a typo"


def test_a_thread_highlights_through_the_end_of_its_last_line() -> None:
    with FakeAzureDevOps() as ado:
        ado.add_pull_request(
            "Fabrikam Fiber", "app", NUMBER, head="h" * 40, base="b" * 40, changed={APP: "edit"}
        )
        client = AzureDevOpsClient(ado.ref(REPO, NUMBER), TOKEN, 5.0)
        spanning = finding(APP, 12, CODE).model_copy(update={"start_line": 10})
        blank_end = finding(APP, 20, "x = 1\n").model_copy(update={"start_line": 19})
        comments = [new_comment(spanning, "azure"), new_comment(blank_end, "azure")]
        assert client.post(client.read().info, comments) == []
    sent = [r.body["threadContext"] for r in ado.requests if r.kind == "create_thread"]
    last = "    return valeu  # a typo"
    assert sent[0]["rightFileStart"] == {"line": 10, "offset": 1}
    assert sent[0]["rightFileEnd"] == {"line": 12, "offset": len(last) + 1}
    assert sent[1]["rightFileEnd"] == {"line": 20, "offset": 1}  # an empty last line
