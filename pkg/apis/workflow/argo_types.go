package workflow

// This file holds the parts of Argo Workflows v3.3.8's Template that the
// executor does not act on (except ResourceTemplate and DataTemplate, which
// `argoexec resource` and `argoexec data` run), with Argo's JSON names, so
// that every template Argo accepts decodes strictly here too. The types are
// written here, not imported from Argo's module.

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// GitArtifact is a git repository checked out as an artifact.
type GitArtifact struct {
	// Repo is the repository's URL.
	Repo string `json:"repo"`
	// Revision is the commit, tag or branch to check out.
	Revision string `json:"revision,omitempty"`
	// Depth makes a shallow clone of that many commits.
	Depth *uint64 `json:"depth,omitempty"`
	// Fetch are extra refspecs to fetch.
	Fetch []string `json:"fetch,omitempty"`
	// UsernameSecret is the secret key holding the user name.
	UsernameSecret *corev1.SecretKeySelector `json:"usernameSecret,omitempty"`
	// PasswordSecret is the secret key holding the password.
	PasswordSecret *corev1.SecretKeySelector `json:"passwordSecret,omitempty"`
	// SSHPrivateKeySecret is the secret key holding an SSH private key.
	SSHPrivateKeySecret *corev1.SecretKeySelector `json:"sshPrivateKeySecret,omitempty"`
	// InsecureIgnoreHostKey skips verification of the SSH host key.
	InsecureIgnoreHostKey bool `json:"insecureIgnoreHostKey,omitempty"`
	// DisableSubmodules skips the repository's submodules.
	DisableSubmodules bool `json:"disableSubmodules,omitempty"`
}

// ArtifactoryAuth is the credentials of a JFrog Artifactory repository.
type ArtifactoryAuth struct {
	// UsernameSecret is the secret key holding the user name.
	UsernameSecret *corev1.SecretKeySelector `json:"usernameSecret,omitempty"`
	// PasswordSecret is the secret key holding the password.
	PasswordSecret *corev1.SecretKeySelector `json:"passwordSecret,omitempty"`
}

// ArtifactoryArtifact is a file in a JFrog Artifactory repository.
type ArtifactoryArtifact struct {
	// URL is the file's URL.
	URL             string `json:"url"`
	ArtifactoryAuth `json:",inline"`
}

// ArtifactoryArtifactRepository is a JFrog Artifactory artifact repository.
type ArtifactoryArtifactRepository struct {
	ArtifactoryAuth `json:",inline"`
	// RepoURL is the repository's URL.
	RepoURL string `json:"repoURL,omitempty"`
}

// HDFSKrbConfig is the Kerberos configuration of an HDFS client.
type HDFSKrbConfig struct {
	// KrbCCacheSecret is the secret key holding a Kerberos credential cache.
	KrbCCacheSecret *corev1.SecretKeySelector `json:"krbCCacheSecret,omitempty"`
	// KrbKeytabSecret is the secret key holding a Kerberos keytab.
	KrbKeytabSecret *corev1.SecretKeySelector `json:"krbKeytabSecret,omitempty"`
	// KrbUsername is the Kerberos user name.
	KrbUsername string `json:"krbUsername,omitempty"`
	// KrbRealm is the Kerberos realm.
	KrbRealm string `json:"krbRealm,omitempty"`
	// KrbConfigConfigMap is the ConfigMap key holding krb5.conf.
	KrbConfigConfigMap *corev1.ConfigMapKeySelector `json:"krbConfigConfigMap,omitempty"`
	// KrbServicePrincipalName is the principal of the HDFS service.
	KrbServicePrincipalName string `json:"krbServicePrincipalName,omitempty"`
}

// HDFSConfig is the address and identity of an HDFS client.
type HDFSConfig struct {
	HDFSKrbConfig `json:",inline"`
	// Addresses are the name nodes' host:port.
	Addresses []string `json:"addresses,omitempty"`
	// HDFSUser is the user to act as.
	HDFSUser string `json:"hdfsUser,omitempty"`
}

// HDFSArtifact is a file in HDFS.
type HDFSArtifact struct {
	HDFSConfig `json:",inline"`
	// Path is the file's path in HDFS.
	Path string `json:"path"`
	// Force overwrites an existing file.
	Force bool `json:"force,omitempty"`
}

// HDFSArtifactRepository is an HDFS artifact repository.
type HDFSArtifactRepository struct {
	HDFSConfig `json:",inline"`
	// PathFormat is the path template of an artifact.
	PathFormat string `json:"pathFormat,omitempty"`
	// Force overwrites an existing file.
	Force bool `json:"force,omitempty"`
}

// OSSLifecycleRule is the lifecycle of objects in an OSS bucket.
type OSSLifecycleRule struct {
	// MarkInfrequentAccessAfterDays moves objects to Infrequent Access after that many days.
	MarkInfrequentAccessAfterDays int32 `json:"markInfrequentAccessAfterDays,omitempty"`
	// MarkDeletionAfterDays deletes objects after that many days.
	MarkDeletionAfterDays int32 `json:"markDeletionAfterDays,omitempty"`
}

// OSSBucket is the location and credentials of an Alibaba Cloud OSS bucket.
type OSSBucket struct {
	// Endpoint is the OSS endpoint.
	Endpoint string `json:"endpoint,omitempty"`
	// Bucket is the bucket name.
	Bucket string `json:"bucket,omitempty"`
	// AccessKeySecret is the secret key holding the access key.
	AccessKeySecret *corev1.SecretKeySelector `json:"accessKeySecret,omitempty"`
	// SecretKeySecret is the secret key holding the secret key.
	SecretKeySecret *corev1.SecretKeySelector `json:"secretKeySecret,omitempty"`
	// CreateBucketIfNotPresent creates the bucket when it is missing.
	CreateBucketIfNotPresent bool `json:"createBucketIfNotPresent,omitempty"`
	// SecurityToken is an STS security token.
	SecurityToken string `json:"securityToken,omitempty"`
	// LifecycleRule is the bucket's lifecycle.
	LifecycleRule *OSSLifecycleRule `json:"lifecycleRule,omitempty"`
}

// OSSArtifact is an object in an OSS bucket.
type OSSArtifact struct {
	OSSBucket `json:",inline"`
	// Key is the object key.
	Key string `json:"key"`
}

// OSSArtifactRepository is an OSS artifact repository.
type OSSArtifactRepository struct {
	OSSBucket `json:",inline"`
	// KeyFormat is the key template of an artifact.
	KeyFormat string `json:"keyFormat,omitempty"`
}

// GCSBucket is the location and credentials of a Google Cloud Storage bucket.
type GCSBucket struct {
	// Bucket is the bucket name.
	Bucket string `json:"bucket,omitempty"`
	// ServiceAccountKeySecret is the secret key holding a service-account key.
	ServiceAccountKeySecret *corev1.SecretKeySelector `json:"serviceAccountKeySecret,omitempty"`
}

// GCSArtifact is an object in a GCS bucket.
type GCSArtifact struct {
	GCSBucket `json:",inline"`
	// Key is the object key.
	Key string `json:"key"`
}

// GCSArtifactRepository is a GCS artifact repository.
type GCSArtifactRepository struct {
	GCSBucket `json:",inline"`
	// KeyFormat is the key template of an artifact.
	KeyFormat string `json:"keyFormat,omitempty"`
}

// ResourceTemplate is a template that acts on a Kubernetes object
// (`argoexec resource ACTION`).
type ResourceTemplate struct {
	// Action is get, create, apply, delete, replace or patch.
	Action string `json:"action"`
	// MergeStrategy is the patch type of action patch: strategic (default), merge or json.
	MergeStrategy string `json:"mergeStrategy,omitempty"`
	// Manifest is the object, as YAML or JSON.
	Manifest string `json:"manifest,omitempty"`
	// SetOwnerReference makes the workflow the object's owner.
	SetOwnerReference bool `json:"setOwnerReference,omitempty"`
	// SuccessCondition is a label-selector-style expression over the object
	// (e.g. status.succeeded > 0) that ends the step successfully.
	SuccessCondition string `json:"successCondition,omitempty"`
	// FailureCondition is an expression of the same syntax that fails the step.
	FailureCondition string `json:"failureCondition,omitempty"`
	// Flags are extra kubectl flags in Argo's executor (e.g. --validate=false).
	Flags []string `json:"flags,omitempty"`
}

// DataTemplate is a template that lists an artifact source and transforms
// the list (`argoexec data`); Argo calls the type Data.
type DataTemplate struct {
	// Source is where the data comes from.
	Source DataSource `json:"source"`
	// Transformation is applied to the source's list, step by step.
	Transformation []TransformationStep `json:"transformation"`
}

// DataSource is the source of a data template; one field is set.
type DataSource struct {
	// ArtifactPaths lists the files under an artifact location.
	ArtifactPaths *ArtifactPaths `json:"artifactPaths,omitempty"`
}

// ArtifactPaths is an artifact (a location, possibly a directory) whose
// file paths a data template lists.
type ArtifactPaths struct {
	Artifact `json:",inline"`
}

// TransformationStep is one step of a data template's transformation.
type TransformationStep struct {
	// Expression is an expr expression applied to the data.
	Expression string `json:"expression"`
}

// ExecutorConfig configures the executor containers of a pod.
type ExecutorConfig struct {
	// ServiceAccountName is the executor's service account.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// RetryStrategy says how the controller retries a failed step.
type RetryStrategy struct {
	// Limit is the most retries (an int or a string holding one).
	Limit *intstr.IntOrString `json:"limit,omitempty"`
	// RetryPolicy is Always, OnFailure, OnError or OnTransientError.
	RetryPolicy string `json:"retryPolicy,omitempty"`
	// Backoff spaces the retries out.
	Backoff *Backoff `json:"backoff,omitempty"`
	// Affinity places retries away from the nodes that failed.
	Affinity *RetryAffinity `json:"affinity,omitempty"`
	// Expression, when false, stops retrying.
	Expression string `json:"expression,omitempty"`
}

// Backoff is the spacing of retries.
type Backoff struct {
	// Duration is the first wait (e.g. "2m").
	Duration string `json:"duration,omitempty"`
	// Factor multiplies the wait each time.
	Factor *intstr.IntOrString `json:"factor,omitempty"`
	// MaxDuration bounds the whole retrying.
	MaxDuration string `json:"maxDuration,omitempty"`
}

// RetryAffinity places retries away from the nodes that failed.
type RetryAffinity struct {
	// NodeAntiAffinity avoids the nodes of earlier attempts.
	NodeAntiAffinity *RetryNodeAntiAffinity `json:"nodeAntiAffinity,omitempty"`
}

// RetryNodeAntiAffinity avoids the nodes of earlier attempts (no settings).
type RetryNodeAntiAffinity struct{}

// Metrics are the Prometheus metrics emitted for a step.
type Metrics struct {
	// Prometheus lists the metrics.
	Prometheus []*Prometheus `json:"prometheus"`
}

// Prometheus is one Prometheus metric.
type Prometheus struct {
	// Name is the metric's name.
	Name string `json:"name"`
	// Labels are the metric's labels.
	Labels []*MetricLabel `json:"labels,omitempty"`
	// Help describes the metric.
	Help string `json:"help"`
	// When is a condition for emitting the metric.
	When string `json:"when,omitempty"`
	// Gauge makes it a gauge.
	Gauge *Gauge `json:"gauge,omitempty"`
	// Histogram makes it a histogram.
	Histogram *Histogram `json:"histogram,omitempty"`
	// Counter makes it a counter.
	Counter *Counter `json:"counter,omitempty"`
}

// MetricLabel is one label of a metric.
type MetricLabel struct {
	// Key is the label's name.
	Key string `json:"key"`
	// Value is the label's value.
	Value string `json:"value"`
}

// Gauge is a gauge metric.
type Gauge struct {
	// Value is the metric's value (an expression).
	Value string `json:"value"`
	// Realtime emits the metric while the step runs.
	Realtime *bool `json:"realtime"`
}

// Histogram is a histogram metric.
type Histogram struct {
	// Value is the observed value (an expression).
	Value string `json:"value"`
	// Buckets are the bucket bounds.
	Buckets []json.Number `json:"buckets"`
}

// Counter is a counter metric.
type Counter struct {
	// Value is the increment (an expression).
	Value string `json:"value"`
}

// Synchronization is the lock a step (or workflow) must hold to run.
type Synchronization struct {
	// Semaphore is a semaphore whose limit is in a ConfigMap.
	Semaphore *SemaphoreRef `json:"semaphore,omitempty"`
	// Mutex is a named mutex.
	Mutex *Mutex `json:"mutex,omitempty"`
}

// SemaphoreRef names the ConfigMap key holding a semaphore's limit.
type SemaphoreRef struct {
	// ConfigMapKeyRef is the ConfigMap key.
	ConfigMapKeyRef *corev1.ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// Mutex is a named mutex.
type Mutex struct {
	// Name is the mutex's name.
	Name string `json:"name,omitempty"`
}

// Memoize caches a step's outputs under a key.
type Memoize struct {
	// Key is the cache key.
	Key string `json:"key"`
	// Cache is where the entries are kept.
	Cache *Cache `json:"cache"`
	// MaxAge is the oldest entry still used (e.g. "24h").
	MaxAge string `json:"maxAge"`
}

// Cache is where memoized outputs are kept.
type Cache struct {
	// ConfigMap is a ConfigMap-based cache.
	ConfigMap *corev1.ConfigMapKeySelector `json:"configMap"`
}

// ParallelSteps is one group of a steps template: steps that run in parallel.
type ParallelSteps []WorkflowStep

// WorkflowStep is one step of a steps template.
type WorkflowStep struct {
	// Name is the step's name.
	Name string `json:"name,omitempty"`
	// Template is the template the step runs.
	Template string `json:"template,omitempty"`
	// Inline is a template written in place of Template.
	Inline *Template `json:"inline,omitempty"`
	// Arguments are the template's inputs.
	Arguments Arguments `json:"arguments,omitempty"`
	// TemplateRef refers to a template of a WorkflowTemplate.
	TemplateRef *TemplateRef `json:"templateRef,omitempty"`
	// WithItems runs the step once per item.
	WithItems []Item `json:"withItems,omitempty"`
	// WithParam runs the step once per element of a JSON list.
	WithParam string `json:"withParam,omitempty"`
	// WithSequence runs the step once per number of a sequence.
	WithSequence *Sequence `json:"withSequence,omitempty"`
	// When is a condition for running the step.
	When string `json:"when,omitempty"`
	// ContinueOn lets the workflow go on when the step fails or errors.
	ContinueOn *ContinueOn `json:"continueOn,omitempty"`
	// OnExit is a template run after the step (deprecated: use hooks.exit).
	OnExit string `json:"onExit,omitempty"`
	// Hooks are templates run at lifecycle events of the step.
	Hooks map[string]LifecycleHook `json:"hooks,omitempty"`
}

// DAGTemplate is a template that runs tasks in dependency order.
type DAGTemplate struct {
	// Target names the tasks to run (all when empty).
	Target string `json:"target,omitempty"`
	// Tasks are the DAG's tasks.
	Tasks []DAGTask `json:"tasks"`
	// FailFast stops scheduling tasks once one fails (default true).
	FailFast *bool `json:"failFast,omitempty"`
}

// DAGTask is one task of a DAG template.
type DAGTask struct {
	// Name is the task's name.
	Name string `json:"name"`
	// Template is the template the task runs.
	Template string `json:"template,omitempty"`
	// Inline is a template written in place of Template.
	Inline *Template `json:"inline,omitempty"`
	// Arguments are the template's inputs.
	Arguments Arguments `json:"arguments,omitempty"`
	// TemplateRef refers to a template of a WorkflowTemplate.
	TemplateRef *TemplateRef `json:"templateRef,omitempty"`
	// Dependencies are the tasks that must succeed first.
	Dependencies []string `json:"dependencies,omitempty"`
	// WithItems runs the task once per item.
	WithItems []Item `json:"withItems,omitempty"`
	// WithParam runs the task once per element of a JSON list.
	WithParam string `json:"withParam,omitempty"`
	// WithSequence runs the task once per number of a sequence.
	WithSequence *Sequence `json:"withSequence,omitempty"`
	// When is a condition for running the task.
	When string `json:"when,omitempty"`
	// ContinueOn lets the DAG go on when the task fails or errors.
	ContinueOn *ContinueOn `json:"continueOn,omitempty"`
	// OnExit is a template run after the task (deprecated: use hooks.exit).
	OnExit string `json:"onExit,omitempty"`
	// Depends is a boolean expression over other tasks' results.
	Depends string `json:"depends,omitempty"`
	// Hooks are templates run at lifecycle events of the task.
	Hooks map[string]LifecycleHook `json:"hooks,omitempty"`
}

// Arguments are the inputs passed to a template or a workflow.
type Arguments struct {
	// Parameters are the parameter values.
	Parameters []Parameter `json:"parameters,omitempty"`
	// Artifacts are the artifacts.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// TemplateRef refers to a template of a WorkflowTemplate or ClusterWorkflowTemplate.
type TemplateRef struct {
	// Name is the WorkflowTemplate's name.
	Name string `json:"name,omitempty"`
	// Template is the template's name in it.
	Template string `json:"template,omitempty"`
	// ClusterScope refers to a ClusterWorkflowTemplate.
	ClusterScope bool `json:"clusterScope,omitempty"`
}

// LifecycleHook is a template run at a lifecycle event (e.g. exit).
type LifecycleHook struct {
	// Template is the template to run.
	Template string `json:"template,omitempty"`
	// Arguments are its inputs.
	Arguments Arguments `json:"arguments,omitempty"`
	// TemplateRef refers to a template of a WorkflowTemplate.
	TemplateRef *TemplateRef `json:"templateRef,omitempty"`
	// Expression is the condition that fires the hook.
	Expression string `json:"expression,omitempty"`
}

// Sequence is a numeric sequence for withSequence.
type Sequence struct {
	// Count is the number of elements (not with End).
	Count *intstr.IntOrString `json:"count,omitempty"`
	// Start is the first number.
	Start *intstr.IntOrString `json:"start,omitempty"`
	// End is the last number (not with Count).
	End *intstr.IntOrString `json:"end,omitempty"`
	// Format is a printf format for each number.
	Format string `json:"format,omitempty"`
}

// ContinueOn says which outcomes of a step let the workflow go on.
type ContinueOn struct {
	// Error continues on an error.
	Error bool `json:"error,omitempty"`
	// Failed continues on a failure.
	Failed bool `json:"failed,omitempty"`
}

// SuspendTemplate is a template that pauses the workflow.
type SuspendTemplate struct {
	// Duration resumes automatically after it (e.g. "20s").
	Duration string `json:"duration,omitempty"`
}

// ContainerSetTemplate runs several containers in one pod, in dependency order.
type ContainerSetTemplate struct {
	// Containers are the containers.
	Containers []ContainerNode `json:"containers"`
	// VolumeMounts are mounted into every container.
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// RetryStrategy retries failed containers in the pod.
	RetryStrategy *ContainerSetRetryStrategy `json:"retryStrategy,omitempty"`
}

// ContainerNode is one container of a container set.
type ContainerNode struct {
	corev1.Container `json:",inline"`
	// Dependencies are the containers that must succeed first.
	Dependencies []string `json:"dependencies,omitempty"`
}

// ContainerSetRetryStrategy retries failed containers of a container set.
type ContainerSetRetryStrategy struct {
	// Duration is the wait between retries (e.g. "1s").
	Duration string `json:"duration,omitempty"`
	// Retries is the number of retries.
	Retries *intstr.IntOrString `json:"retries"`
}

// HTTPTemplate is a template whose step is an HTTP request, sent by Argo's
// agent; Argo calls the type HTTP.
type HTTPTemplate struct {
	// Method is the request method.
	Method string `json:"method,omitempty"`
	// URL is the request URL.
	URL string `json:"url"`
	// Headers are the request headers.
	Headers []HTTPHeader `json:"headers,omitempty"`
	// TimeoutSeconds bounds the request (default 30).
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
	// SuccessCondition is an expression over the response.
	SuccessCondition string `json:"successCondition,omitempty"`
	// Body is the request body.
	Body string `json:"body,omitempty"`
	// InsecureSkipVerify skips TLS verification.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// HTTPHeader is a header of an HTTP template's request.
type HTTPHeader struct {
	// Name is the header's name.
	Name string `json:"name"`
	// Value is the header's value.
	Value string `json:"value,omitempty"`
	// ValueFrom takes the value from a secret.
	ValueFrom *HTTPHeaderSource `json:"valueFrom,omitempty"`
}

// HTTPHeaderSource is where an HTTP header's value comes from.
type HTTPHeaderSource struct {
	// SecretKeyRef is a secret key.
	SecretKeyRef *corev1.SecretKeySelector `json:"secretKeyRef,omitempty"`
}

// Plugin is a plugin template: one object keyed by the plugin's name, kept
// as written (Argo keeps it as an opaque object too).
type Plugin struct {
	// Value is the JSON object.
	Value json.RawMessage
}

// UnmarshalJSON keeps the object as is; anything but an object is an error.
func (p *Plugin) UnmarshalJSON(data []byte) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("decode plugin: want an object keyed by the plugin's name, got %s", data)
	}
	p.Value = append(json.RawMessage(nil), data...)
	return nil
}

// MarshalJSON writes the object back as it was read.
func (p Plugin) MarshalJSON() ([]byte, error) {
	if p.Value == nil {
		return []byte("{}"), nil
	}
	return p.Value, nil
}

// Item is one element of withItems: any JSON value (string, number, bool,
// list or object), kept as written.
type Item struct {
	// Value is the JSON value.
	Value json.RawMessage
}

// UnmarshalJSON keeps the value as is.
func (i *Item) UnmarshalJSON(data []byte) error {
	i.Value = append(json.RawMessage(nil), data...)
	return nil
}

// MarshalJSON writes the value back as it was read.
func (i Item) MarshalJSON() ([]byte, error) {
	if i.Value == nil {
		return []byte("null"), nil
	}
	return i.Value, nil
}
