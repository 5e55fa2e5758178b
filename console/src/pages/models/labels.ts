// Names people read for the model registry's enums (one place for every page that shows them).
import { TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ExternalModelProvider } from "../../gen/platform/modelmanager/v1/external_model_pb";
import { ModelAliasTargetKind } from "../../gen/platform/modelmanager/v1/model_alias_pb";

export const TASK_NAMES: Record<TaskType, string> = {
  [TaskType.UNSPECIFIED]: "—",
  [TaskType.TEXT_GENERATION]: "Text generation",
  [TaskType.EMBEDDING]: "Embedding",
  [TaskType.RERANK]: "Rerank",
  [TaskType.SPEECH_TO_TEXT]: "Speech to text",
  [TaskType.GUARDRAIL]: "Guardrail",
};

export const TASKS = [TaskType.TEXT_GENERATION, TaskType.EMBEDDING, TaskType.RERANK, TaskType.SPEECH_TO_TEXT, TaskType.GUARDRAIL] as const;

export const PROVIDER_NAMES: Record<ExternalModelProvider, string> = {
  [ExternalModelProvider.UNSPECIFIED]: "—",
  [ExternalModelProvider.VENDOR_A]: "Vendor A (hosted)",
  [ExternalModelProvider.VENDOR_B]: "Vendor B (deployment path)",
  [ExternalModelProvider.CUSTOM_COMPATIBLE]: "OpenAI-compatible URL",
};

export const PROVIDERS = [ExternalModelProvider.CUSTOM_COMPATIBLE, ExternalModelProvider.VENDOR_A, ExternalModelProvider.VENDOR_B] as const;

export const TARGET_KIND_NAMES: Record<ModelAliasTargetKind, string> = {
  [ModelAliasTargetKind.UNSPECIFIED]: "—",
  [ModelAliasTargetKind.MODEL_DEPLOYMENT]: "Model deployment",
  [ModelAliasTargetKind.EXTERNAL_MODEL]: "External model",
};

export const TARGET_KINDS = [ModelAliasTargetKind.MODEL_DEPLOYMENT, ModelAliasTargetKind.EXTERNAL_MODEL] as const;
