{{/* Names and labels (Kubernetes names are at most 63 characters). */}}
{{- define "switchboard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "switchboard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "switchboard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "switchboard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: switchboard
{{- end -}}

{{- define "switchboard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "switchboard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
Settings shared by every pod (server/settings.py reads them). Credentials only ever come from Secrets by reference;
`required` stops a render that lacks one, naming the value to set.
*/}}
{{- define "switchboard.env" -}}
- name: SWITCHBOARD_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "database.existingSecret is required: a Secret whose database.urlKey holds the PostgreSQL URL" .Values.database.existingSecret }}
      key: {{ .Values.database.urlKey }}
- name: SWITCHBOARD_ENCRYPTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "encryption.existingSecret is required: a Secret whose encryption.key holds a Fernet key shared by every replica" .Values.encryption.existingSecret }}
      key: {{ .Values.encryption.key }}
{{- if .Values.redis.existingSecret }}
- name: SWITCHBOARD_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret }}
      key: {{ .Values.redis.urlKey }}
{{- end }}
{{- if .Values.metrics.auth.existingSecret }}
- name: SWITCHBOARD_METRICS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .Values.metrics.auth.existingSecret }}
      key: {{ .Values.metrics.auth.key }}
{{- end }}
- name: SWITCHBOARD_METRICS_ENABLED
  value: {{ .Values.metrics.enabled | quote }}
- name: SWITCHBOARD_VAR_DIR
  value: /var/lib/switchboard
{{- if .Values.meteringJournal.volume }}
- name: SWITCHBOARD_METERING_JOURNAL_DIR
  value: /var/lib/switchboard-journal
{{- end }}
- name: SWITCHBOARD_JWT_ISSUER
  value: {{ .Values.identity.issuer | quote }}
- name: SWITCHBOARD_JWT_AUDIENCE
  value: {{ .Values.identity.audience | quote }}
- name: SWITCHBOARD_ROLES_CLAIM
  value: {{ .Values.identity.rolesClaim | quote }}
{{- if .Values.identity.jwksUrl }}
- name: SWITCHBOARD_JWKS_URL
  value: {{ .Values.identity.jwksUrl | quote }}
{{- end }}
{{- if .Values.gatewayPublicUrl }}
- name: SWITCHBOARD_GATEWAY_PUBLIC_URL
  value: {{ .Values.gatewayPublicUrl | quote }}
{{- end }}
- name: SWITCHBOARD_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: SWITCHBOARD_OTEL_EXPORTER
  value: {{ .Values.tracing.exporter | quote }}
{{- if .Values.tracing.otlpEndpoint }}
- name: SWITCHBOARD_OTEL_ENDPOINT
  value: {{ .Values.tracing.otlpEndpoint | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The embedded identity's key must be the same in every replica: from a Secret, never generated per pod. */}}
{{- define "switchboard.checkIdentity" -}}
{{- if and (not .Values.identity.jwksUrl) (not .Values.identity.signingKey.existingSecret) -}}
{{- fail "identity.signingKey.existingSecret is required when identity.jwksUrl is empty: every management replica must verify the sessions the others sign" -}}
{{- end -}}
{{- end -}}

{{/* The var dir and /tmp are the only writable paths: the root filesystem is read-only. */}}
{{- define "switchboard.volumes" -}}
- name: var
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- with .Values.meteringJournal.volume }}
- name: metering-journal
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if and (not .Values.identity.jwksUrl) .Values.identity.signingKey.existingSecret }}
- name: signing-key
  secret:
    secretName: {{ .Values.identity.signingKey.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ .Values.identity.signingKey.key }}
        path: signing-key.pem
{{- end }}
{{- end -}}

{{- define "switchboard.volumeMounts" -}}
- name: var
  mountPath: /var/lib/switchboard
- name: tmp
  mountPath: /tmp
{{- if .Values.meteringJournal.volume }}
- name: metering-journal
  mountPath: /var/lib/switchboard-journal
{{- end }}
{{- if and (not .Values.identity.jwksUrl) .Values.identity.signingKey.existingSecret }}
- name: signing-key
  mountPath: /var/lib/switchboard/signing-key.pem
  subPath: signing-key.pem
  readOnly: true
{{- end }}
{{- end -}}
