{{/*
Shared pieces of the templates. The object names, keys and paths are those of deploy/ and
`fief install` (src/cli/install/manifests.rs); tests/offline/chart.rs holds the two to each other.
*/}}

{{/* The agent's namespace. */}}
{{- define "fief.namespace" -}}
{{- .Values.namespace -}}
{{- end -}}

{{/*
The name of a cluster-scoped object: as in deploy/ for fief-system, else with the namespace
appended, so installs in two namespaces never share one. Call with (list "name" .).
*/}}
{{- define "fief.clusterName" -}}
{{- $name := index . 0 -}}
{{- $ns := include "fief.namespace" (index . 1) -}}
{{- if eq $ns "fief-system" -}}{{ $name }}{{- else -}}{{ printf "%s-%s" $name $ns }}{{- end -}}
{{- end -}}

{{/* Labels Helm's tools expect on every object; tests/offline/chart.rs leaves them out of the comparison. */}}
{{- define "fief.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
{{- end -}}

{{/* The agent's image. */}}
{{- define "fief.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
How the agent authenticates to the git host: "token", "ssh" or "" (a public repo). Fails on
contradicting values, as `fief install` refuses contradicting flags.
*/}}
{{- define "fief.gitAuth" -}}
{{- $g := .Values.git -}}
{{- $inline := or $g.token $g.sshKey $g.knownHosts -}}
{{- if and $g.token (or $g.sshKey $g.knownHosts) -}}
{{- fail "git.token and git.sshKey/git.knownHosts exclude each other: the repo is read over https with a token or over ssh with a key" -}}
{{- end -}}
{{- if and (or $g.sshKey $g.knownHosts) (not (and $g.sshKey $g.knownHosts)) -}}
{{- fail "git.sshKey and git.knownHosts go together: the agent checks the git host's key against known_hosts" -}}
{{- end -}}
{{- if and $g.existingSecret $inline -}}
{{- fail "git.existingSecret and inline git credentials exclude each other: give one" -}}
{{- end -}}
{{- if $g.existingSecret -}}
{{- if not (has $g.auth (list "token" "ssh")) -}}
{{- fail "git.existingSecret needs git.auth: token (the Secret has key token) or ssh (keys ssh-key and known_hosts)" -}}
{{- end -}}
{{- $g.auth -}}
{{- else if $g.auth -}}
{{- fail "git.auth goes with git.existingSecret; inline credentials imply it" -}}
{{- else if $g.token -}}
token
{{- else if $g.sshKey -}}
ssh
{{- end -}}
{{- end -}}

{{/* Whether the push webhook is on, and whether the age key is given ("true" or ""). */}}
{{- define "fief.webhook" -}}
{{- if and .Values.webhook.secret .Values.webhook.existingSecret -}}
{{- fail "webhook.secret and webhook.existingSecret exclude each other: give one" -}}
{{- end -}}
{{- if or .Values.webhook.secret .Values.webhook.existingSecret }}true{{ end -}}
{{- end -}}
{{- define "fief.ageKey" -}}
{{- if and .Values.ageKey.key .Values.ageKey.existingSecret -}}
{{- fail "ageKey.key and ageKey.existingSecret exclude each other: give one" -}}
{{- end -}}
{{- if or .Values.ageKey.key .Values.ageKey.existingSecret }}true{{ end -}}
{{- end -}}
{{/* Whether the web view asks for a token ("true" or ""). */}}
{{- define "fief.webToken" -}}
{{- if and .Values.web.token .Values.web.existingSecret -}}
{{- fail "web.token and web.existingSecret exclude each other: give one" -}}
{{- end -}}
{{- if and (or .Values.web.token .Values.web.existingSecret) (not .Values.web.enabled) -}}
{{- fail "web.token and web.existingSecret need web.enabled: true" -}}
{{- end -}}
{{- if or .Values.web.token .Values.web.existingSecret }}true{{ end -}}
{{- end -}}

{{/*
The Pod template's `fief.dev/credentials`: the first 8 bytes of SHA-256 over the inline
credentials, as `fief install` computes it (token, webhook secret, age key, web token, Helm's
repository and registry configs, each followed by a
NUL byte, then the SSH key and known_hosts), so a new key rolls the Pods. Secrets named by
existingSecret are not read; restart the Deployment after changing one.
*/}}
{{- define "fief.credentialsHash" -}}
{{- $h := "" -}}
{{- with .Values.git.token }}{{ $h = printf "%s%s\x00" $h (trim .) }}{{ end -}}
{{- with .Values.webhook.secret }}{{ $h = printf "%s%s\x00" $h (trim .) }}{{ end -}}
{{- with .Values.ageKey.key }}{{ $h = printf "%s%s\x00" $h . }}{{ end -}}
{{- with .Values.web.token }}{{ $h = printf "%s%s\x00" $h (trim .) }}{{ end -}}
{{- with .Values.helmCredentials.repositories }}{{ $h = printf "%s%s\x00" $h . }}{{ end -}}
{{- with .Values.helmCredentials.registryConfig }}{{ $h = printf "%s%s\x00" $h . }}{{ end -}}
{{- if .Values.git.sshKey }}{{ $h = printf "%s%s%s" $h .Values.git.sshKey .Values.git.knownHosts }}{{ end -}}
{{- sha256sum $h | trunc 16 -}}
{{- end -}}
