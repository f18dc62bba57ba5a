package config

import (
	"strconv"

	"github.com/argoexec/argoexec/pkg/apis/workflow"
)

// KeyDoc documents one key of the config YAML, for the README table and
// the test that keeps that table in sync with the code.
type KeyDoc struct {
	// Key is the key's path, e.g. artifactRepository.s3.bucket.
	Key string
	// Default is the value used when the key is unset ("" if none).
	Default string
	// Doc says what the key is for, in one sentence.
	Doc string
}

// Keys lists every key of the config YAML with its default and purpose,
// then the keys of Argo's configuration that are accepted and ignored.
func Keys() []KeyDoc {
	return append(ourKeys(), argoIgnored()...)
}

func ourKeys() []KeyDoc {
	s3 := "artifactRepository.s3."
	gcs := "artifactRepository.gcs."
	rt := "artifactRepository.artifactory."
	oss := "artifactRepository.oss."
	refused := "Argo's; refused by argoexec-step (not implemented): "
	return []KeyDoc{
		{"containerRuntimeExecutor", workflow.ExecutorK8sAPI, "Backend wait uses to reach the main container when no label or selector picks one: docker, emissary, k8sapi or kubelet."},
		{"containerRuntimeExecutors", "", "Ordered list of {name, selector}; the first selector matching the workflow's labels picks the backend. The workflow label " + workflow.LabelContainerRuntimeExecutor + " overrides it."},
		{"containerRuntimeExecutors[].name", "", "Backend picked when the selector matches: docker, emissary, k8sapi or kubelet; Argo's pns is accepted here and refused for a workflow it picks."},
		{"containerRuntimeExecutors[].selector", "", "Label selector (matchLabels, matchExpressions) matched against the workflow's labels; must not be empty."},
		{"kubeletPort", strconv.Itoa(workflow.DefaultKubeletPort), "HTTPS port of the node's kubelet (kubelet backend)."},
		{"kubeletInsecure", "false", "Skip verification of the kubelet's serving certificate (kubelet backend); excludes kubeletCAFile."},
		{"kubeletCAFile", "", "Absolute path on the node of the CA bundle that signs the kubelet's serving certificate; mounted read-only into wait at the same path. Empty means the service-account CA."},
		{"sidecarMode", workflow.SidecarModeNative, "native: user sidecars are init containers with restartPolicy Always, stopped by the kubelet (Kubernetes >= 1.29); legacy: plain containers that wait kills."},
		{"dockerSockPath", workflow.DefaultDockerSockPath, "Docker Engine socket on the node, mounted read-only into wait only (docker backend)."},
		{"emissaryImageVolume", ImageVolumeAuto, "emissary backend: always mounts the executor image into main and the sidecars (an image volume: Kubernetes >= 1.35, containerd >= 2.1 or CRI-O >= 1.31) and builds no init container for the wrapper; never copies the wrapper from init, as Argo does; auto: always when every node can, as `argoexec-step run` checks (render: never)."},
		{"executor", "", "Container spec of the init and wait containers (argoexec); the pod builder sets its name, volumeMounts and ARGO_* env."},
		{"executor.image", DefaultExecutorImage, "argoexec image for init and wait; leave the key out for the default (an empty image is an error)."},
		{"executor.imagePullPolicy", "", "Pull policy of the argoexec image: Always, IfNotPresent or Never (empty: the Kubernetes default)."},
		{"executor.command", "argoexec", "Path of the argoexec binary in the image; init or wait is appended."},
		{"executor.args", "", "Extra arguments appended to `argoexec init|wait`, e.g. --loglevel=debug."},
		{"executor.env", "", "Extra environment variables for init and wait; names starting with ARGO_ are reserved."},
		{"executor.resources", "", "Resource requests and limits of init and wait."},
		{"executor.securityContext", "", "Security context of init and wait, used as it is. Unset: Pod Security restricted (see README, Pod Security); {} drops every default. With the docker backend, runAsNonRoot: true needs runAsGroup (the socket's group)."},
		{"artifactRepository.s3", "", "S3-compatible repository for output artifacts; its credentials go to init and wait only, never to main. Exactly one of s3, gcs, artifactory and oss."},
		{s3 + "endpoint", "", "host[:port] of the S3 service (no scheme)."},
		{s3 + "bucket", "", "Bucket that holds the artifacts."},
		{s3 + "region", "", "Region of the bucket."},
		{s3 + "insecure", "false", "Use plain HTTP to the endpoint."},
		{s3 + "accessKeySecret", "", "{name, key} of the Secret holding the access key ID."},
		{s3 + "secretKeySecret", "", "{name, key} of the Secret holding the secret access key."},
		{s3 + "keyFormat", workflow.DefaultKeyFormat, "Object key of an output artifact; may refer to {{workflow.name}}, {{pod.name}}, {{pod.namespace}}, {{template.name}}, {{artifact.name}}."},
		{s3 + "roleARN", "", refused + "credentials come from accessKeySecret and secretKeySecret."},
		{s3 + "useSDKCreds", "", refused + "credentials come from accessKeySecret and secretKeySecret."},
		{s3 + "createBucketIfNotPresent", "", refused + "create the bucket beforehand."},
		{s3 + "encryptionOptions", "", refused + "objects are stored as the bucket's default encryption says."},
		{s3 + "keyPrefix", "", refused + "deprecated in Argo; use keyFormat."},
		{"artifactRepository.archiveLogs", "false", "Save main's combined log to the repository after main exits (as Argo's: true here wins over a template's archiveLocation.archiveLogs), as main.log beside the step's artifacts, reported as the output artifact main-logs."},
		{"artifactRepository.artifactory", "", "JFrog Artifactory (or any WebDAV server taking PUT) repository for output artifacts, instead of s3; its secrets are mounted as files into the containers that use them (init, wait), never main."},
		{rt + "repoURL", "", "Absolute http(s) URL under which outputs are stored at the keyFormat's default layout, WORKFLOW/POD/ARTIFACT.tgz."},
		{rt + "usernameSecret", "", "{name, key} of the Secret holding the user name (basic authentication); with passwordSecret."},
		{rt + "passwordSecret", "", "{name, key} of the Secret holding the password."},
		{"artifactRepository.hdfs", "", refused + "argoexec has no hdfs store; use s3, gcs, artifactory or oss."},
		{"artifactRepository.oss", "", "Alibaba Cloud OSS repository for output artifacts, instead of s3, reached through OSS's S3-compatible API; its key secrets are mounted as files into the containers that use them (init, wait), never main."},
		{oss + "endpoint", "", "OSS endpoint: host[:port], http:// when no scheme is given, as Argo's client."},
		{oss + "bucket", "", "Bucket that holds the artifacts."},
		{oss + "accessKeySecret", "", "{name, key} of the Secret holding the access key ID."},
		{oss + "secretKeySecret", "", "{name, key} of the Secret holding the secret access key."},
		{oss + "keyFormat", workflow.DefaultKeyFormat, "Object key of an output artifact, as s3's."},
		{oss + "createBucketIfNotPresent", "false", "Create the bucket before the first upload when it is missing."},
		{oss + "securityToken", "", "STS security token, sent as the S3 session token."},
		{oss + "lifecycleRule", "", "Not applied (OSS's S3-compatible API has no lifecycle rules): wait logs a warning; set the rule on the bucket."},
		{"artifactRepository.gcs", "", "Google Cloud Storage repository for output artifacts (instead of s3); its service-account key goes to init and wait only, never to main."},
		{gcs + "bucket", "", "Bucket that holds the artifacts."},
		{gcs + "serviceAccountKeySecret", "", "{name, key} of the Secret holding a service account's JSON key; unset: workload identity (the GCE metadata server's token)."},
		{gcs + "keyFormat", workflow.DefaultKeyFormat, "Object key of an output artifact, as s3's."},
	}
}

// ignoredDoc starts the doc of every key in argoIgnored.
const ignoredDoc = "Argo's; accepted and ignored by argoexec-step (Argo's controller uses it): "

// argoIgnored documents the top-level keys of Argo v3.3's controller (and
// argo-server) configuration that this controller accepts and ignores, so
// that Argo's own ConfigMap loads unchanged.
func argoIgnored() []KeyDoc {
	return []KeyDoc{
		{"mainContainer", "", ignoredDoc + "defaults of main containers; argoexec-step takes main as the template writes it."},
		{"images", "", ignoredDoc + "image commands for the emissary executor (on emissary, argoexec-step refuses a container without command instead)."},
		{"instanceID", "", ignoredDoc + "the controller instance a workflow belongs to."},
		{"namespace", "", ignoredDoc + "the namespace Argo's controller watches."},
		{"kubeConfig", "", ignoredDoc + "kubeconfig for pods of another cluster."},
		{"nodeEvents", "", ignoredDoc + "Kubernetes events for nodes."},
		{"parallelism", "", ignoredDoc + "most workflows run at once."},
		{"namespaceParallelism", "", ignoredDoc + "most workflows run at once per namespace."},
		{"resourceRateLimit", "", ignoredDoc + "rate of pod creation."},
		{"workflowDefaults", "", ignoredDoc + "defaults merged into every workflow."},
		{"workflowRestrictions", "", ignoredDoc + "which workflows may run."},
		{"links", "", ignoredDoc + "links in Argo's UI."},
		{"navColor", "", ignoredDoc + "colour of Argo's UI."},
		{"metricsConfig", "", ignoredDoc + "Prometheus metrics of the controller."},
		{"telemetryConfig", "", ignoredDoc + "telemetry of the controller."},
		{"persistence", "", ignoredDoc + "the workflow archive database."},
		{"retentionPolicy", "", ignoredDoc + "how many finished workflows are kept."},
		{"podSpecLogStrategy", "", ignoredDoc + "logging of pod specs."},
		{"podGCGracePeriodSeconds", "", ignoredDoc + "grace period of pod garbage collection."},
		{"podGCDeleteDelayDuration", "", ignoredDoc + "delay of pod garbage collection."},
		{"initialDelay", "", ignoredDoc + "delay before the controller starts."},
		{"sso", "", ignoredDoc + "argo-server's single sign-on."},
	}
}

// ArgoIgnoredKeys lists the top-level keys of Argo v3.3's configuration
// that this controller accepts and ignores (Config.Ignored names those set).
func ArgoIgnoredKeys() []string {
	var keys []string
	for _, k := range argoIgnored() {
		keys = append(keys, k.Key)
	}
	return keys
}
