"""switchboard.resources.v1.ResourceListService: the console's resource lists a page at a time, SQLite and PostgreSQL.

For an operator, a tenant admin and a member, walking every page of each list gives exactly what the platform's
unpaged list answers them (same items, same order; refused alike where the unpaged list refuses), for page sizes
that divide the list evenly and that do not; an empty list is one empty page; a full last page carries no token;
page sizes out of bounds and tokens that are forged or belong to another list are refused naming the field; and
resources added or removed between pages never make a walk repeat or skip one that stayed.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from tests.clients import ConnectJsonCaller
from tests.conftest import BACKENDS, Database, Server, fresh_database, running_server
from tests.rag_helpers import model, new_rag
from tests.world import World, make_world, must

PAGES = "switchboard.resources.v1.ResourceListService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
EXTERNALS = "platform.modelmanager.v1.ExternalModelService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"
MCP = "platform.agents.v1.ExternalMcpServerService"
RAGS = "platform.ragmanager.v1.RagService"
AGENTS = "platform.agents.v1.PresetAgentService"
POLICIES = "platform.platform.v1.McpNetworkPolicyService"
TENANTS = "platform.tenants.v1.TenantService"

# (paged method, unpaged method, list field)
LISTS = [
    ("ListModelDeployments", f"{DEPLOYMENTS}/ListModelDeployments", "modelDeployments"),
    ("ListExternalModels", f"{EXTERNALS}/ListExternalModels", "externalModels"),
    ("ListModelAliases", f"{ALIASES}/ListModelAliases", "aliases"),
    ("ListExternalMcpServers", f"{MCP}/ListExternalMcpServers", "externalMcpServers"),
    ("ListRags", f"{RAGS}/ListRags", "rags"),
    ("ListPresetAgents", f"{AGENTS}/ListPresetAgents", "presetAgents"),
    ("ListMcpNetworkPolicies", f"{POLICIES}/ListMcpNetworkPolicies", "policies"),
    ("ListTenants", f"{TENANTS}/ListTenants", "tenants"),
]


# The walks of platform-wide lists (deployments, tenants) take a call per item a page of one at a time, and on the
# run's shared database those lists hold what every module before this one made: this module has a database of its
# own (per test process: nothing else writes to it while a walk runs).
@pytest.fixture(scope="module", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with fresh_database(str(request.param), tmp_path_factory) as made:
        yield made


@pytest_asyncio.fixture(scope="module")
async def server(database: Database) -> AsyncIterator[Server]:
    async with running_server(database) as running:
        yield running


def _sharing(i: int, tenant_id: str) -> dict[str, Any]:
    """Every third resource shared with all tenants, every third with the world's tenant only, the rest unshared:
    the unpaged lists answer each caller a different subset."""
    choices: list[dict[str, Any]] = [{"shareToAll": True}, {"sharedWith": [tenant_id]}, {}]
    return choices[i % 3]


@pytest_asyncio.fixture(scope="module")
async def world(server: Server) -> World:
    """One populated tenant for the module's reads (the walks are the time, so each is over one world's items, not
    what every earlier test added); the one test that changes a list makes a world of its own."""
    connect = ConnectJsonCaller(server.base_url)
    await make_world(server, connect)  # two more tenants: the operator's tenant list then spans pages of up to 3
    return await _populated(server, connect)


@pytest.fixture
async def own_world(server: Server, connect: ConnectJsonCaller) -> World:
    return await _populated(server, connect)


async def _populated(server: Server, connect: ConnectJsonCaller) -> World:
    world = await make_world(server, connect)
    operator, tenant = server.admin_token, world.tenant_id
    editor = world.tokens["editor"]
    tag = secrets.token_hex(3)
    deployments = []
    for i in range(5):
        body = {
            "modelDeployment": {
                "name": f"pg-d{i}-{tag}",
                "publicModelId": f"pg/d{i}-{tag}",
                "endpointUrl": "http://127.0.0.1:9/v1",
                "sharing": _sharing(i, tenant),
            }
        }
        deployments.append(must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=operator)))
    for i in range(4):
        body = {
            "externalModel": {
                "name": f"pg-x{i}-{tag}",
                "publicModelId": f"pg/x{i}-{tag}",
                "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
                "providerModelId": "gpt-x",
                "baseUrl": "https://api.example.com/v1",
                "sharing": _sharing(i, tenant),
            }
        }
        must(await connect.call(f"{EXTERNALS}/CreateExternalModel", body, token=operator))
    for i in range(4):
        target = {"kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT", "name": f"pg-d{i}-{tag}"}
        body = {"alias": {"publicModelId": f"pg-a{i}-{tag}", "sharing": _sharing(i, tenant), "targetRef": target}}
        must(await connect.call(f"{ALIASES}/CreateModelAlias", body, token=operator))
    for i in range(3):
        server_body = {"name": f"pg-m{i}-{tag}", "serverUrl": "https://mx.example.test/mcp"}
        platform = {"externalMcpServer": {**server_body, "sharing": _sharing(i, tenant)}}
        must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", platform, token=operator))
        own = {"tenantId": tenant, "externalMcpServer": {**server_body, "name": f"pg-t{i}-{tag}"}}
        must(await connect.call(f"{MCP}/CreateExternalMcpServer", own, token=editor))
    embedding = (await model(connect, operator))["publicModelId"]
    for _ in range(4):
        await new_rag(connect, editor, tenant, embedding)
    chat = await model(connect, operator, "TASK_TYPE_TEXT_GENERATION")
    for i in range(4):
        agent = {"name": f"pg-g{i}-{tag}", "publicModelId": f"pg-g{i}-{tag}", "baseModel": chat["publicModelId"]}
        must(
            await connect.call(f"{AGENTS}/CreatePresetAgent", {"tenantId": tenant, "presetAgent": agent}, token=editor)
        )
    return world


@pytest.fixture
async def policies(server: Server, connect: ConnectJsonCaller) -> Any:
    """Three MCP network policies (private ranges no other test approves), removed afterwards: they are global."""
    created = []
    for i in range(3):
        spec = {"spec": {"allowedNetworks": [f"10.{secrets.randbelow(200) + 50}.{i}.0/24"]}}
        created.append(
            must(await connect.call(f"{POLICIES}/CreateMcpNetworkPolicy", spec, token=server.admin_token))["policy"]
        )
    yield created
    for policy in created:
        body = {k: policy[k] for k in ("name", "uid", "resourceVersion")}
        must(await connect.call(f"{POLICIES}/DeleteMcpNetworkPolicy", body, token=server.admin_token))


async def _walk(
    connect: ConnectJsonCaller,
    caller: tuple[str, str | None],
    method: str,
    field: str,
    size: int,
    *,
    most: int,
    **body: Any,
) -> tuple[list[dict[str, Any]], int]:
    token, tenant = caller
    items: list[dict[str, Any]] = []
    page_token = ""
    calls = 0
    while True:
        page = {"pageSize": size, "pageToken": page_token}
        request = {**body, "page": page}
        answer = must(await connect.call(f"{PAGES}/{method}", request, token=token, tenant=tenant, get=True))
        calls += 1
        assert len(answer.get(field, [])) <= size
        items += answer.get(field, [])
        page_token = answer.get("nextPageToken", "")
        if not page_token:
            return items, calls
        assert calls <= most, "the pages do not end"


def _callers(server: Server, world: World) -> dict[str, tuple[str, str | None]]:
    """(token, X-Platform-Tenant-Id) of each caller: the operator both unscoped and acting in the tenant."""
    return {
        "operator": (server.admin_token, None),
        "operator-in-tenant": (server.admin_token, world.tenant_id),
        "tenant-admin": (world.tokens["admin"], world.tenant_id),
        "member": (world.tokens["member"], world.tenant_id),
    }


@pytest.mark.parametrize("case", LISTS, ids=lambda case: case[0])
async def test_pages_concatenate_to_the_unpaged_list_for_each_caller(
    server: Server, connect: ConnectJsonCaller, world: World, policies: Any, case: tuple[str, str, str]
) -> None:
    method, unpaged, field = case
    bodies: list[dict[str, Any]] = [{}]
    if method in ("ListRags", "ListPresetAgents"):
        bodies.append({"tenantId": world.tenant_id})  # narrowed to the tenant, as the unpaged list can be
    seen_lengths: set[int] = set()
    for who, (token, tenant) in _callers(server, world).items():
        for body in bodies:
            whole = await connect.call(unpaged, body, token=token, tenant=tenant, get=True)
            if not whole.ok:  # refused alike (an unscoped operator's MCP servers, a member's network policies)
                paged = await connect.call(
                    f"{PAGES}/{method}", {**body, "page": {"pageSize": 2}}, token=token, tenant=tenant, get=True
                )
                assert (paged.code, paged.message) == (whole.code, whole.message), who
                continue
            items = list(whole.body.get(field, []))
            seen_lengths.add(len(items))
            for size in sorted({1, 2, 3, max(1, len(items)), len(items) + 1}):
                walked, calls = await _walk(
                    connect, (token, tenant), method, field, size, most=2 * len(items) + 10, **body
                )
                assert walked == items, (who, body, size)
                assert calls == max(1, -(-len(items) // size)), (who, size)  # a full last page has no token
    assert max(seen_lengths) >= 3  # the walks crossed pages
    if method != "ListMcpNetworkPolicies":
        assert len(seen_lengths) >= 2, seen_lengths  # the callers' lists differ, so visibility was exercised


async def test_an_empty_list_is_one_empty_page(connect: ConnectJsonCaller, world: World) -> None:
    outsider = world.tokens["outsider"]
    for method, field in (("ListRags", "rags"), ("ListPresetAgents", "presetAgents")):
        body = {"tenantId": world.other_tenant_id, "page": {"pageSize": 1}}
        answer = must(await connect.call(f"{PAGES}/{method}", body, token=outsider, get=True))
        assert answer.get(field, []) == [] and answer.get("nextPageToken", "") == "", method


async def test_bad_sizes_and_tokens_are_refused(server: Server, connect: ConnectJsonCaller, world: World) -> None:
    operator = server.admin_token
    body: dict[str, Any]
    for size in (-1, 501):
        body = {"page": {"pageSize": size}}
        result = await connect.call(f"{PAGES}/ListModelDeployments", body, token=operator, get=True)
        assert result.code == "invalid_argument" and "page_size" in result.message
    first = must(await connect.call(f"{PAGES}/ListTenants", {"page": {"pageSize": 1}}, token=operator, get=True))
    tenants_token = first["nextPageToken"]
    for method, _, _ in LISTS:
        if method == "ListTenants":
            continue
        for forged in (
            tenants_token,
            "not-a-token",
            "W10",
            "WyJyYWdzIiwxXQ",
        ):  # another list's, garbage, [], ["rags", 1]
            body = {"page": {"pageToken": forged}}
            result = await connect.call(f"{PAGES}/{method}", body, token=operator, tenant=world.tenant_id, get=True)
            assert result.code == "invalid_argument" and "page_token" in result.message, (method, forged)
    # A token of the right list whose time is not a time.
    bad_time = "WyJtY3BfbmV0d29ya19wb2xpY2llcyIsIm5vdC1hLXRpbWUiLCJ4Il0"  # ["mcp_network_policies","not-a-time","x"]
    body = {"page": {"pageToken": bad_time}}
    result = await connect.call(f"{PAGES}/ListMcpNetworkPolicies", body, token=operator, get=True)
    assert result.code == "invalid_argument" and "page_token" in result.message


async def test_changes_between_pages_neither_repeat_nor_skip_what_stayed(
    server: Server, connect: ConnectJsonCaller, own_world: World
) -> None:
    editor, tenant = own_world.tokens["editor"], own_world.tenant_id
    own = {"tenantId": tenant}
    first = must(await connect.call(f"{PAGES}/ListRags", {**own, "page": {"pageSize": 2}}, token=editor, get=True))
    seen = first["rags"]
    must(await connect.call(f"{RAGS}/DeleteRag", {"id": seen[0]["id"]}, token=editor))
    embedding = (await model(connect, server.admin_token))["publicModelId"]
    for name in ("a-before", "zz-after"):
        await new_rag(connect, editor, tenant, embedding, name=name)
    page_token = first["nextPageToken"]
    after: list[dict[str, Any]] = []
    while page_token:
        body = {**own, "page": {"pageSize": 2, "pageToken": page_token}}
        answer = must(await connect.call(f"{PAGES}/ListRags", body, token=editor, get=True))
        after += answer["rags"]
        page_token = answer.get("nextPageToken", "")
    now = must(await connect.call(f"{RAGS}/ListRags", own, token=editor, get=True))["rags"]
    ids = [r["id"] for r in seen + after]
    assert len(ids) == len(set(ids))  # nothing twice
    stayed = [r["id"] for r in now if r["name"] != "a-before"]
    assert [i for i in ids if i != seen[0]["id"]] == stayed  # nothing that stayed skipped; the new later one in


def _labels(item: dict[str, Any]) -> list[str]:
    """What a search looks in: an item's name, id, public model id and display name (an alias's inside `alias`)."""
    fields = ("name", "id", "publicModelId", "displayName")
    return [str(part[f]).lower() for part in (item, item.get("alias", {})) for f in fields if f in part]


@pytest.mark.parametrize("case", [c for c in LISTS if c[0] not in ("ListMcpNetworkPolicies", "ListTenants")], ids=str)
async def test_a_search_pages_through_the_matching_items_only(
    server: Server, connect: ConnectJsonCaller, world: World, case: tuple[str, str, str]
) -> None:
    """The pickers' search as you type: the items whose name, id or display name contain the text, ignoring case, in
    the list's order, a page at a time; LIKE's wildcards are matched as themselves."""
    method, unpaged, field = case
    # The operator sees every item; MCP servers are listed within a tenant.
    caller = (server.admin_token, world.tenant_id if method == "ListExternalMcpServers" else None)
    whole = must(await connect.call(unpaged, {}, token=caller[0], tenant=caller[1], get=True))
    items = whole.get(field, [])
    assert len(items) >= 3, method
    term = max(_labels(items[1]), key=len)[2:-1].upper()  # part of the longest label, in the wrong case
    for search in (term, "%", "_"):
        expected = [i for i in items if any(search.lower() in label for label in _labels(i))]
        found, _ = await _walk(connect, caller, method, field, 1, most=len(items) + 2, search=search)
        assert found == expected, (method, search)
        assert expected != items or search == "_", (method, search)  # no label has a "%": not read as a wildcard
    result = await connect.call(f"{PAGES}/{method}", {"search": "x" * 101}, token=caller[0], tenant=caller[1], get=True)
    assert result.code == "invalid_argument" and "search" in result.message
