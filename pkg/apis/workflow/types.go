package workflow

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Template is one step of a workflow as Argo users write it: a container or a
// script, its inputs and outputs, and the sidecars that run beside it. The pod
// builder (pkg/podspec) turns it into a pod; argoexec init and wait read it
// back from the file named by EnvTemplatePath. Field names are Argo's.
type Template struct {
	// Name identifies the template; it is also the default pod name.
	Name string `json:"name,omitempty"`
	// Inputs are the parameters substituted at render time and the artifacts
	// that init loads before main starts.
	Inputs Inputs `json:"inputs,omitempty"`
	// Outputs are what wait collects from main once it has exited.
	Outputs Outputs `json:"outputs,omitempty"`
	// Metadata holds labels and annotations copied onto the pod.
	Metadata Metadata `json:"metadata,omitempty"`
	// Container is the main container; exactly one of Container and Script is set.
	Container *corev1.Container `json:"container,omitempty"`
	// Script is a main container whose Source init stages into a file.
	Script *ScriptTemplate `json:"script,omitempty"`
	// Sidecars run beside main and are stopped once main and wait have exited.
	Sidecars []UserContainer `json:"sidecars,omitempty"`
	// Volumes are the pod volumes that main's and the sidecars' volumeMounts
	// refer to (an emptyDir, say, to put an output path on a volume).
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// ActiveDeadlineSeconds bounds the pod's run time (pod spec field of that
	// name). Argo's type is an IntOrString: DecodeTemplate also accepts a
	// string holding a whole number ("30"), as Argo's controller writes a
	// substituted parameter, and refuses any other string by name.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ArchiveLocation is the artifact repository for this step's outputs;
	// Argo's controller sets it to the configured repository (with the key
	// prefix of this node) for the executor to use.
	ArchiveLocation *ArtifactLocation `json:"archiveLocation,omitempty"`
	// Resource makes this a resource template: `argoexec resource` acts on a
	// Kubernetes object and waits on its conditions.
	Resource *ResourceTemplate `json:"resource,omitempty"`
	// Data makes this a data template: `argoexec data` lists an artifact
	// source and transforms the list.
	Data *DataTemplate `json:"data,omitempty"`
	// InitContainers run before main (after argoexec init).
	InitContainers []UserContainer `json:"initContainers,omitempty"`

	// The fields below are Argo v3.3.8's and are acted on by a controller
	// only: argoexec carries them and ignores them. pkg/podspec says, for
	// each, whether our argoexec-step applies it, ignores it or
	// refuses it.

	// NodeSelector constrains the nodes the pod may run on.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity is the pod's scheduling affinity.
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Tolerations are the pod's tolerations.
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// SchedulerName is the scheduler that places the pod.
	SchedulerName string `json:"schedulerName,omitempty"`
	// PriorityClassName is the pod's priority class.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// Priority is the pod's priority.
	Priority *int32 `json:"priority,omitempty"`
	// ServiceAccountName is the pod's service account.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// AutomountServiceAccountToken says whether the pod mounts its service-account token.
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// Executor configures the executor containers (their service account).
	Executor *ExecutorConfig `json:"executor,omitempty"`
	// HostAliases are added to the pod's /etc/hosts.
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`
	// SecurityContext is the pod's security context.
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// PodSpecPatch is a strategic merge patch applied to the pod spec.
	PodSpecPatch string `json:"podSpecPatch,omitempty"`
	// Daemon lets the workflow go on once main is ready, and stops it at the end.
	Daemon *bool `json:"daemon,omitempty"`
	// RetryStrategy says how the controller retries a failed step.
	RetryStrategy *RetryStrategy `json:"retryStrategy,omitempty"`
	// Timeout bounds the node's whole run, pending time included (e.g. "30s").
	Timeout string `json:"timeout,omitempty"`
	// Parallelism bounds the pods a steps or dag template runs at once.
	Parallelism *int64 `json:"parallelism,omitempty"`
	// FailFast fails the template as soon as one of its children fails.
	FailFast *bool `json:"failFast,omitempty"`
	// Metrics are the Prometheus metrics the controller emits for the step.
	Metrics *Metrics `json:"metrics,omitempty"`
	// Synchronization holds the semaphore or mutex the step must take.
	Synchronization *Synchronization `json:"synchronization,omitempty"`
	// Memoize caches the step's outputs under a key.
	Memoize *Memoize `json:"memoize,omitempty"`
	// Steps makes this a steps template: a list of parallel groups of steps.
	Steps []ParallelSteps `json:"steps,omitempty"`
	// DAG makes this a dag template.
	DAG *DAGTemplate `json:"dag,omitempty"`
	// Suspend makes this a suspend template.
	Suspend *SuspendTemplate `json:"suspend,omitempty"`
	// ContainerSet runs several containers in the one pod.
	ContainerSet *ContainerSetTemplate `json:"containerSet,omitempty"`
	// HTTP makes this an HTTP template: the controller's agent sends a request.
	HTTP *HTTPTemplate `json:"http,omitempty"`
	// Plugin makes this a plugin template, run by an executor plugin.
	Plugin *Plugin `json:"plugin,omitempty"`
}

// SaveLogsAsArtifact says whether main's log is archived, as Argo
// v3.3.8's Template.SaveLogsAsArtifact: the archive location says
// archiveLogs (Argo's controller sets it there from its repository or the
// template) and the pod has a container named main.
func (t *Template) SaveLogsAsArtifact() bool {
	if t == nil || t.ArchiveLocation == nil || t.ArchiveLocation.ArchiveLogs == nil || !*t.ArchiveLocation.ArchiveLogs {
		return false
	}
	if t.ContainerSet == nil {
		return true
	}
	for _, c := range t.ContainerSet.Containers {
		if c.Name == MainContainerName {
			return true
		}
	}
	return false
}

// Metadata is the labels and annotations a template adds to its pod.
type Metadata struct {
	// Labels are added to the pod's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to the pod's annotations.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Inputs are a template's input parameters and artifacts.
type Inputs struct {
	// Parameters are substituted into the template as {{inputs.parameters.NAME}}.
	Parameters []Parameter `json:"parameters,omitempty"`
	// Artifacts are loaded by init to their Path before main starts.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Outputs are the parameters and artifacts a template produces.
type Outputs struct {
	// Parameters are small values read from files in main.
	Parameters []Parameter `json:"parameters,omitempty"`
	// Artifacts are files or directories uploaded to the artifact repository.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Result holds a script's result once it ran (Argo's controller fills it
	// in on the node; in a template it is carried, never read).
	Result *string `json:"result,omitempty"`
	// ExitCode holds main's exit code as a string once it ran (as Result).
	ExitCode *string `json:"exitCode,omitempty"`
}

// Parameter is a named string value: an input (Value or Default) or an
// output (read from ValueFrom.Path; ValueFrom.Default, Argo's documented
// form, or Default when the file is missing: see OutputDefault).
type Parameter struct {
	// Name is how templates refer to the parameter.
	Name string `json:"name"`
	// Default is used when no value is given (input) or the file is missing
	// (output; Argo documents valueFrom.default for that, which wins).
	Default *AnyString `json:"default,omitempty"`
	// Value is the parameter's value; for outputs wait fills it in.
	Value *AnyString `json:"value,omitempty"`
	// ValueFrom says where an output parameter's value comes from.
	ValueFrom *ValueFrom `json:"valueFrom,omitempty"`
	// GlobalName exports an output parameter to the workflow's scope as
	// {{workflow.outputs.parameters.GLOBALNAME}}; the executor echoes it.
	GlobalName string `json:"globalName,omitempty"`
	// Enum lists the values an input parameter may take (controller-side check).
	Enum []AnyString `json:"enum,omitempty"`
	// Description says what the parameter is for (documentation only).
	Description *AnyString `json:"description,omitempty"`
}

// MainContainerNames are the containers wait waits for, and that stopping
// the step stops first: every container of a containerSet (Argo v3.3.8's
// Template.GetMainContainerNames), else main alone. Outputs are still read
// from main: a containerSet that has outputs names one container main.
func (t *Template) MainContainerNames() []string {
	if t == nil || t.ContainerSet == nil {
		return []string{MainContainerName}
	}
	names := make([]string, 0, len(t.ContainerSet.Containers))
	for _, c := range t.ContainerSet.Containers {
		names = append(names, c.Name)
	}
	return names
}

// OutputDefault is the value an output parameter takes when its source
// (ValueFrom.Path) does not exist: ValueFrom.Default, as Argo documents it,
// else Default, as this project first spelled it; nil when neither is set.
func (p *Parameter) OutputDefault() *AnyString {
	if p.ValueFrom != nil && p.ValueFrom.Default != nil {
		return p.ValueFrom.Default
	}
	return p.Default
}

// ValueFrom is the source of a parameter's value. The executor reads Path
// (container and script templates), JSONPath and JQFilter (resource
// templates); the other sources are resolved by Argo's controller.
type ValueFrom struct {
	// Path is a file in the main container whose contents become the value.
	Path string `json:"path,omitempty"`
	// JSONPath selects an output value from a resource template's object.
	JSONPath string `json:"jsonPath,omitempty"`
	// JQFilter is a jq expression over a resource template's object.
	JQFilter string `json:"jqFilter,omitempty"`
	// Event is an expression over the event that submitted the workflow (controller).
	Event string `json:"event,omitempty"`
	// Parameter refers to another step's output, e.g. {{steps.s.outputs.parameters.p}} (controller).
	Parameter string `json:"parameter,omitempty"`
	// Supplied says the value is supplied later, through the CLI or API (controller).
	Supplied *SuppliedValueFrom `json:"supplied,omitempty"`
	// ConfigMapKeyRef takes an input value from a ConfigMap key (controller).
	ConfigMapKeyRef *corev1.ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
	// Default is the value used when the source fails, e.g. the file at Path
	// does not exist (Argo's documented output-parameter default).
	Default *AnyString `json:"default,omitempty"`
	// Expression is evaluated by the controller to give the value.
	Expression string `json:"expression,omitempty"`
}

// SuppliedValueFrom marks a value that is supplied later (valueFrom.supplied: {}).
type SuppliedValueFrom struct{}

// AnyString is a string that also accepts a JSON number or boolean, as Argo
// users write `value: 42` for parameters.
type AnyString string

// UnmarshalJSON accepts a string, a number or a boolean.
func (s *AnyString) UnmarshalJSON(data []byte) error {
	var str string
	if err := json.Unmarshal(data, &str); err == nil {
		*s = AnyString(str)
		return nil
	}
	var num json.Number
	if err := json.Unmarshal(data, &num); err == nil {
		*s = AnyString(num.String())
		return nil
	}
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		*s = AnyString(strconv.FormatBool(b))
		return nil
	}
	return fmt.Errorf("decode parameter value: want a string, number or boolean, got %s", data)
}

// String returns the value as a plain string.
func (s AnyString) String() string { return string(s) }

// AnyStringPtr returns a pointer to s as an AnyString, for building parameters.
func AnyStringPtr(s string) *AnyString {
	v := AnyString(s)
	return &v
}

// Artifact is a file or directory that init loads (input) or wait uploads
// (output), with where it lives. Argo inlines an ArtifactLocation here; the
// location fields are spelled out instead (same JSON) so that code can
// write Artifact{S3: ...} literals. Location returns them as one value.
type Artifact struct {
	// Name identifies the artifact.
	Name string `json:"name"`
	// Path is where the artifact is in the main container.
	Path string `json:"path,omitempty"`
	// Mode is the permission bits (0-0777) set on a loaded input artifact.
	Mode *int32 `json:"mode,omitempty"`
	// From refers to an artifact of an earlier step (controller).
	From string `json:"from,omitempty"`
	// FromExpression is evaluated by the controller to pick the artifact.
	FromExpression string `json:"fromExpression,omitempty"`
	// GlobalName exports an output artifact to the workflow's scope.
	GlobalName string `json:"globalName,omitempty"`
	// Optional artifacts may be absent without failing the step.
	Optional bool `json:"optional,omitempty"`
	// Archive says how the artifact is packed; nil means tar.gz.
	Archive *ArchiveStrategy `json:"archive,omitempty"`
	// SubPath selects a path inside the artifact's source.
	SubPath string `json:"subPath,omitempty"`
	// RecurseMode applies Mode to every file of a directory artifact.
	RecurseMode bool `json:"recurseMode,omitempty"`

	// ArchiveLogs, on an archive location, says to save main's log there.
	ArchiveLogs *bool `json:"archiveLogs,omitempty"`
	// S3 is an object in an S3 bucket.
	S3 *S3Artifact `json:"s3,omitempty"`
	// Git is a git repository checked out as the artifact.
	Git *GitArtifact `json:"git,omitempty"`
	// HTTP is a URL to download the artifact from.
	HTTP *HTTPArtifact `json:"http,omitempty"`
	// Artifactory is a file in a JFrog Artifactory repository.
	Artifactory *ArtifactoryArtifact `json:"artifactory,omitempty"`
	// HDFS is a file in HDFS.
	HDFS *HDFSArtifact `json:"hdfs,omitempty"`
	// Raw is the artifact's content inline.
	Raw *RawArtifact `json:"raw,omitempty"`
	// OSS is an object in an Alibaba Cloud OSS bucket.
	OSS *OSSArtifact `json:"oss,omitempty"`
	// GCS is an object in a Google Cloud Storage bucket.
	GCS *GCSArtifact `json:"gcs,omitempty"`
}

// Location returns where the artifact lives, as Argo's inlined ArtifactLocation.
func (a *Artifact) Location() ArtifactLocation {
	return ArtifactLocation{
		ArchiveLogs: a.ArchiveLogs, S3: a.S3, Git: a.Git, HTTP: a.HTTP, Artifactory: a.Artifactory,
		HDFS: a.HDFS, Raw: a.Raw, OSS: a.OSS, GCS: a.GCS,
	}
}

// SetLocation replaces the artifact's location fields with l's.
func (a *Artifact) SetLocation(l ArtifactLocation) {
	a.ArchiveLogs, a.S3, a.Git, a.HTTP, a.Artifactory = l.ArchiveLogs, l.S3, l.Git, l.HTTP, l.Artifactory
	a.HDFS, a.Raw, a.OSS, a.GCS = l.HDFS, l.Raw, l.OSS, l.GCS
}

// ArtifactLocation is where artifacts live: one of its kinds is set. It is
// a template's archiveLocation (Argo's controller puts the repository
// there for the executor) and the location part of an Artifact.
type ArtifactLocation struct {
	// ArchiveLogs says to save main's log to this location.
	ArchiveLogs *bool `json:"archiveLogs,omitempty"`
	// S3 is an S3-compatible bucket (and, in an artifact, the object key).
	S3 *S3Artifact `json:"s3,omitempty"`
	// Git is a git repository.
	Git *GitArtifact `json:"git,omitempty"`
	// HTTP is a URL.
	HTTP *HTTPArtifact `json:"http,omitempty"`
	// Artifactory is a JFrog Artifactory repository.
	Artifactory *ArtifactoryArtifact `json:"artifactory,omitempty"`
	// HDFS is an HDFS cluster.
	HDFS *HDFSArtifact `json:"hdfs,omitempty"`
	// Raw is inline content.
	Raw *RawArtifact `json:"raw,omitempty"`
	// OSS is an Alibaba Cloud OSS bucket.
	OSS *OSSArtifact `json:"oss,omitempty"`
	// GCS is a Google Cloud Storage bucket.
	GCS *GCSArtifact `json:"gcs,omitempty"`
}

// ArchiveStrategy says how an artifact is packed: tar (gzip), none or zip.
type ArchiveStrategy struct {
	// Tar packs the artifact as a gzip-compressed tarball (the default).
	Tar *TarStrategy `json:"tar,omitempty"`
	// None stores a single file as is.
	None *NoneStrategy `json:"none,omitempty"`
	// Zip packs the artifact as a zip file.
	Zip *ZipStrategy `json:"zip,omitempty"`
}

// ZipStrategy packs an artifact as a zip file.
type ZipStrategy struct{}

// TarStrategy packs an artifact as tar.gz.
type TarStrategy struct {
	// CompressionLevel is the gzip level (0-9); nil means the gzip default.
	CompressionLevel *int32 `json:"compressionLevel,omitempty"`
}

// NoneStrategy stores an artifact unpacked: a single file as is, a
// directory file by file under the key (s3).
type NoneStrategy struct{}

// S3Bucket is the location and credentials of an S3 bucket.
type S3Bucket struct {
	// Endpoint is host[:port] of the S3 service.
	Endpoint string `json:"endpoint,omitempty"`
	// Bucket is the bucket name.
	Bucket string `json:"bucket,omitempty"`
	// Region is the bucket's region.
	Region string `json:"region,omitempty"`
	// Insecure, when true, talks plain HTTP to the endpoint.
	Insecure *bool `json:"insecure,omitempty"`
	// AccessKeySecret is the secret key holding the access key ID.
	AccessKeySecret *corev1.SecretKeySelector `json:"accessKeySecret,omitempty"`
	// SecretKeySecret is the secret key holding the secret access key.
	SecretKeySecret *corev1.SecretKeySelector `json:"secretKeySecret,omitempty"`
	// RoleARN is the AWS role to assume.
	RoleARN string `json:"roleARN,omitempty"`
	// UseSDKCreds takes credentials from the AWS SDK's default chain.
	UseSDKCreds bool `json:"useSDKCreds,omitempty"`
	// CreateBucketIfNotPresent creates the bucket for output artifacts when it is missing.
	CreateBucketIfNotPresent *CreateS3BucketOptions `json:"createBucketIfNotPresent,omitempty"`
	// EncryptionOptions are the server-side encryption settings of uploads.
	EncryptionOptions *S3EncryptionOptions `json:"encryptionOptions,omitempty"`
}

// CreateS3BucketOptions are the settings of a bucket created on demand.
type CreateS3BucketOptions struct {
	// ObjectLocking turns on object locking on the new bucket.
	ObjectLocking bool `json:"objectLocking,omitempty"`
}

// S3EncryptionOptions say how uploaded objects are encrypted.
type S3EncryptionOptions struct {
	// KmsKeyId is the KMS key that encrypts objects (SSE-KMS).
	KmsKeyId string `json:"kmsKeyId,omitempty"`
	// KmsEncryptionContext is a JSON encryption context for SSE-KMS.
	KmsEncryptionContext string `json:"kmsEncryptionContext,omitempty"`
	// EnableEncryption turns on encryption (SSE-S3 without a key or customer secret).
	EnableEncryption bool `json:"enableEncryption,omitempty"`
	// ServerSideCustomerKeySecret is the secret key holding an SSE-C key.
	ServerSideCustomerKeySecret *corev1.SecretKeySelector `json:"serverSideCustomerKeySecret,omitempty"`
}

// S3Artifact is an artifact stored as one object in S3.
type S3Artifact struct {
	S3Bucket `json:",inline"`
	// Key is the object key.
	Key string `json:"key,omitempty"`
}

// RawArtifact is an artifact whose content is written in the template.
type RawArtifact struct {
	// Data is the file content.
	Data string `json:"data"`
}

// HTTPArtifact is an artifact downloaded from a URL.
type HTTPArtifact struct {
	// URL is where to GET the artifact.
	URL string `json:"url"`
	// Headers are added to the request.
	Headers []Header `json:"headers,omitempty"`
}

// Header is one HTTP request header.
type Header struct {
	// Name is the header name.
	Name string `json:"name"`
	// Value is the header value.
	Value string `json:"value"`
}

// ArtifactRepository is where output artifacts without an explicit location
// are uploaded (ConfigMap artifactRepository). Argo's kinds are all
// accepted; pkg/config says which ones our controller implements.
type ArtifactRepository struct {
	// ArchiveLogs says to save main's log to the repository.
	ArchiveLogs *bool `json:"archiveLogs,omitempty"`
	// S3 is an S3-compatible repository.
	S3 *S3ArtifactRepository `json:"s3,omitempty"`
	// Artifactory is a JFrog Artifactory repository.
	Artifactory *ArtifactoryArtifactRepository `json:"artifactory,omitempty"`
	// HDFS is an HDFS repository.
	HDFS *HDFSArtifactRepository `json:"hdfs,omitempty"`
	// OSS is an Alibaba Cloud OSS repository.
	OSS *OSSArtifactRepository `json:"oss,omitempty"`
	// GCS is a Google Cloud Storage repository.
	GCS *GCSArtifactRepository `json:"gcs,omitempty"`
}

// S3ArtifactRepository is an S3 bucket plus the key layout of artifacts in it.
type S3ArtifactRepository struct {
	S3Bucket `json:",inline"`
	// KeyFormat is the object key template (DefaultKeyFormat when empty);
	// see KeyFormatVariables for what it may refer to.
	KeyFormat string `json:"keyFormat,omitempty"`
	// KeyPrefix is Argo's deprecated key prefix (use KeyFormat).
	KeyPrefix string `json:"keyPrefix,omitempty"`
}

// ScriptTemplate is a main container whose Source is staged into a file by
// init and run by main as the last argument of its command.
type ScriptTemplate struct {
	corev1.Container `json:",inline"`
	// Source is the script's text.
	Source string `json:"source"`
}

// UserContainer is a user sidecar.
type UserContainer struct {
	corev1.Container `json:",inline"`
	// MirrorVolumeMounts, when true, mounts main's volume mounts into the sidecar too.
	MirrorVolumeMounts *bool `json:"mirrorVolumeMounts,omitempty"`
}

// ResultReplacement says how many bytes of a script's result were not UTF-8
// and were replaced with U+FFFD (one per byte) when the result was encoded,
// and where in main's output the first of them was.
type ResultReplacement struct {
	// Bytes is how many bytes were replaced.
	Bytes int64 `json:"bytes"`
	// FirstOffset is the offset in main's standard output of the first.
	FirstOffset int64 `json:"firstOffset"`
}

// String says what was replaced, for logs and messages.
func (r *ResultReplacement) String() string {
	return fmt.Sprintf("the result holds %d bytes that are not UTF-8 (the first at byte offset %d of main's output): each was replaced with U+FFFD; "+
		"write binary output to a file and declare it as an output artifact", r.Bytes, r.FirstOffset)
}

// NodeOutputs is what wait reports, as JSON in the pod annotation
// AnnotationOutputs: the output parameters with their values, the uploaded
// artifacts with their locations, a script's result and main's exit code.
type NodeOutputs struct {
	// Parameters are the output parameters with Value filled in.
	Parameters []Parameter `json:"parameters,omitempty"`
	// Artifacts are the uploaded output artifacts with their location set.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Result is a script's standard output.
	Result *string `json:"result,omitempty"`
	// ResultTruncated says Result is the tail of main's output, cut to the
	// result size limit or to what the report's budget left after the
	// other outputs.
	ResultTruncated bool `json:"resultTruncated,omitempty"`
	// ResultDroppedBytes is how many bytes of main's output were dropped
	// from the head of Result when it was cut.
	ResultDroppedBytes int64 `json:"resultDroppedBytes,omitempty"`
	// ResultReplaced, when set, says Result held bytes that are not UTF-8,
	// which its JSON encoding replaced with U+FFFD.
	ResultReplaced *ResultReplacement `json:"resultReplaced,omitempty"`
	// ResultIncomplete, when set, says why Result may be missing the end
	// of what main printed: its log, written by the node's container
	// runtime, may not hold all of it (the runtime was down when main
	// exited). The step still succeeds or fails by main's exit code.
	ResultIncomplete string `json:"resultIncomplete,omitempty"`
	// ResultIsLog says Result is the tail of main's output, which a
	// reporter may cut further to fit its budget; a result that is a
	// document (a data template's JSON) is never cut. It is not reported.
	ResultIsLog bool `json:"-"`
	// ExitCode is main's exit code.
	ExitCode *int `json:"exitCode,omitempty"`
}

// The kinds of artifact location, named as their fields in Argo's
// ArtifactLocation: what ArtifactLocation.Kind returns.
const (
	KindS3          = "s3"
	KindGit         = "git"
	KindHTTP        = "http"
	KindArtifactory = "artifactory"
	KindHDFS        = "hdfs"
	KindRaw         = "raw"
	KindOSS         = "oss"
	KindGCS         = "gcs"
)

// Kind names the kind of location l is (KindS3 ...), the first set in
// Argo's field order; "" when none is set.
func (l ArtifactLocation) Kind() string {
	switch {
	case l.S3 != nil:
		return KindS3
	case l.Git != nil:
		return KindGit
	case l.HTTP != nil:
		return KindHTTP
	case l.Artifactory != nil:
		return KindArtifactory
	case l.HDFS != nil:
		return KindHDFS
	case l.Raw != nil:
		return KindRaw
	case l.OSS != nil:
		return KindOSS
	case l.GCS != nil:
		return KindGCS
	}
	return ""
}
