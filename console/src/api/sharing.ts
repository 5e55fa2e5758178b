// Sharing and permissions of every resource kind that has them, behind one interface so one SharingEditor serves
// them all. The kinds differ only in their method names and in how `sharing` is saved: model deployments and external
// models have an Update…Sharing method; MCP servers, RAGs and preset agents carry `sharing` on the resource, saved
// through their Update method with the resource as read (the server validates it whole).
import { create } from "@bufbuild/protobuf";
import { client } from "./transport";
import { ExternalMcpServerService } from "../gen/platform/agents/v1/external_mcp_server_service_pb";
import { PresetAgentService } from "../gen/platform/agents/v1/preset_agent_service_pb";
import { ExternalModelService } from "../gen/platform/modelmanager/v1/external_model_service_pb";
import { ModelDeploymentService } from "../gen/platform/modelmanager/v1/model_deployment_service_pb";
import { ModelAliasService } from "../gen/platform/modelmanager/v1/model_alias_service_pb";
import {
  SubjectSchema,
  SubjectType,
  type DeploymentPermission,
  type DeploymentRole,
} from "../gen/platform/modelmanager/v1/permission_pb";
import { SharingSchema } from "../gen/platform/modelmanager/v1/sharing_pb";
import { RagService } from "../gen/platform/ragmanager/v1/rag_service_pb";

export interface SharingValue {
  shareToAll: boolean;
  /** Tenant ids (platform-owned resources only). */
  sharedWith: string[];
}

export interface Grantee {
  type: SubjectType;
  id: string;
  role: DeploymentRole;
}

/** One resource's sharing and permissions, whatever its kind. */
export interface SharingTarget {
  /** What the editor's title names, e.g. "RAG handbook". */
  label: string;
  /** Platform-owned resources share with tenants; tenant-owned ones with their whole tenant or nobody. */
  platformOwned: boolean;
  /** Sharing has no permissions list for this kind (aliases: platform sharing only). */
  permissions: boolean;
  readSharing: (signal: AbortSignal) => Promise<SharingValue>;
  saveSharing: (value: SharingValue) => Promise<void>;
  listPermissions: (signal: AbortSignal) => Promise<Grantee[]>;
  addPermission: (grantee: Grantee) => Promise<void>;
  removePermission: (grantee: Grantee) => Promise<void>;
}

function grantees(permissions: DeploymentPermission[]): Grantee[] {
  return permissions.map((p) => ({ type: p.subject?.type ?? SubjectType.UNSPECIFIED, id: p.subject?.id ?? "", role: p.role }));
}

function subject(grantee: Grantee) {
  return create(SubjectSchema, { type: grantee.type, id: grantee.id });
}

function sharingOf(value: { shareToAll: boolean; sharedWith: string[] } | undefined): SharingValue {
  return { shareToAll: value?.shareToAll ?? false, sharedWith: [...(value?.sharedWith ?? [])] };
}

function sharingMessage(value: SharingValue) {
  return create(SharingSchema, { shareToAll: value.shareToAll, sharedWith: value.sharedWith });
}

/** The resource a Get answered (a Get without one is a server fault, said so). */
export function found<T>(resource: T | undefined): T {
  if (resource === undefined) {
    throw new Error("The server answered without the resource.");
  }
  return resource;
}

export type SharingKind = "deployment" | "external-model" | "alias" | "mcp" | "rag" | "agent";

/** The sharing target of one resource: `name` is its resource name (a RAG's id). */
export function sharingTarget(kind: SharingKind, name: string, label: string, platformOwned: boolean): SharingTarget {
  const common = { label, platformOwned, permissions: true };
  switch (kind) {
    case "deployment": {
      const api = client(ModelDeploymentService);
      return {
        ...common,
        readSharing: async (signal) => sharingOf((await api.getModelDeployment({ name }, { signal })).modelDeployment?.sharing),
        saveSharing: async (value) => { await api.updateModelDeploymentSharing({ name, sharing: sharingMessage(value) }); },
        listPermissions: async (signal) => grantees((await api.listModelDeploymentPermissions({ name }, { signal })).permissions),
        addPermission: async (g) => { await api.addModelDeploymentPermission({ name, subject: subject(g), role: g.role }); },
        removePermission: async (g) => { await api.removeModelDeploymentPermission({ name, subject: subject(g), role: g.role }); },
      };
    }
    case "external-model": {
      const api = client(ExternalModelService);
      return {
        ...common,
        readSharing: async (signal) => sharingOf((await api.getExternalModel({ name }, { signal })).externalModel?.sharing),
        saveSharing: async (value) => { await api.updateExternalModelSharing({ name, sharing: sharingMessage(value) }); },
        listPermissions: async (signal) => grantees((await api.listExternalModelPermissions({ name }, { signal })).permissions),
        addPermission: async (g) => { await api.addExternalModelPermission({ name, subject: subject(g), role: g.role }); },
        removePermission: async (g) => { await api.removeExternalModelPermission({ name, subject: subject(g), role: g.role }); },
      };
    }
    case "alias": {
      // Aliases are platform-owned and have no permission list: tenants reach them through sharing alone.
      const api = client(ModelAliasService);
      return {
        ...common,
        permissions: false,
        readSharing: async (signal) => sharingOf((await api.getModelAlias({ name }, { signal })).alias?.sharing),
        saveSharing: async (value) => {
          const alias = found((await api.getModelAlias({ name })).alias);
          alias.sharing = sharingMessage(value);
          await api.updateModelAlias({ name, alias });
        },
        listPermissions: () => Promise.resolve([]),
        addPermission: () => Promise.reject(new Error("Aliases are shared with tenants only.")),
        removePermission: () => Promise.reject(new Error("Aliases are shared with tenants only.")),
      };
    }
    case "mcp": {
      const api = client(ExternalMcpServerService);
      return {
        ...common,
        readSharing: async (signal) => sharingOf((await api.getExternalMcpServer({ name }, { signal })).externalMcpServer?.sharing),
        saveSharing: async (value) => {
          const server = found((await api.getExternalMcpServer({ name })).externalMcpServer);
          server.sharing = sharingMessage(value);
          // Secrets are write-only and empty here: the server keeps the stored ones when none is sent.
          await api.updateExternalMcpServer({ externalMcpServer: server });
        },
        listPermissions: async (signal) => grantees((await api.listExternalMcpServerPermissions({ name }, { signal })).permissions),
        addPermission: async (g) => { await api.addExternalMcpServerPermission({ name, subject: subject(g), role: g.role }); },
        removePermission: async (g) => { await api.removeExternalMcpServerPermission({ name, subject: subject(g), role: g.role }); },
      };
    }
    case "rag": {
      const api = client(RagService);
      return {
        ...common,
        readSharing: async (signal) => sharingOf((await api.getRag({ id: name }, { signal })).rag?.sharing),
        saveSharing: async (value) => {
          const rag = found((await api.getRag({ id: name })).rag);
          rag.sharing = sharingMessage(value);
          await api.updateRag({ rag });
        },
        listPermissions: async (signal) => grantees((await api.listRagPermissions({ id: name }, { signal })).permissions),
        addPermission: async (g) => { await api.addRagPermission({ id: name, subject: subject(g), role: g.role }); },
        removePermission: async (g) => { await api.removeRagPermission({ id: name, subject: subject(g), role: g.role }); },
      };
    }
    case "agent": {
      const api = client(PresetAgentService);
      return {
        ...common,
        readSharing: async (signal) => sharingOf((await api.getPresetAgent({ name }, { signal })).presetAgent?.sharing),
        saveSharing: async (value) => {
          const agent = found((await api.getPresetAgent({ name })).presetAgent);
          agent.sharing = sharingMessage(value);
          await api.updatePresetAgent({ presetAgent: agent });
        },
        listPermissions: async (signal) => grantees((await api.listPresetAgentPermissions({ name }, { signal })).permissions),
        addPermission: async (g) => { await api.addPresetAgentPermission({ name, subject: subject(g), role: g.role }); },
        removePermission: async (g) => { await api.removePresetAgentPermission({ name, subject: subject(g), role: g.role }); },
      };
    }
  }
}
