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
	// ActiveDeadlineSeconds bounds the pod's run time (pod spec field of that name).
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
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
}

// Parameter is a named string value: an input (Value or Default) or an
// output (read from ValueFrom.Path, Default when the file is missing).
type Parameter struct {
	// Name is how templates refer to the parameter.
	Name string `json:"name"`
	// Default is used when no value is given (input) or the file is missing (output).
	Default *AnyString `json:"default,omitempty"`
	// Value is the parameter's value; for outputs wait fills it in.
	Value *AnyString `json:"value,omitempty"`
	// ValueFrom says where an output parameter's value comes from.
	ValueFrom *ValueFrom `json:"valueFrom,omitempty"`
}

// ValueFrom is the source of an output parameter's value.
type ValueFrom struct {
	// Path is a file in the main container whose contents become the value.
	Path string `json:"path,omitempty"`
}

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
// (output), with where it lives in the artifact repository.
type Artifact struct {
	// Name identifies the artifact.
	Name string `json:"name"`
	// Path is where the artifact is in the main container.
	Path string `json:"path,omitempty"`
	// Optional artifacts may be absent without failing the step.
	Optional bool `json:"optional,omitempty"`
	// Archive says how the artifact is packed; nil means tar.gz.
	Archive *ArchiveStrategy `json:"archive,omitempty"`
	// S3 is an object in an S3 bucket.
	S3 *S3Artifact `json:"s3,omitempty"`
	// Raw is the artifact's content inline.
	Raw *RawArtifact `json:"raw,omitempty"`
	// HTTP is a URL to download the artifact from.
	HTTP *HTTPArtifact `json:"http,omitempty"`
}

// ArchiveStrategy says how an artifact is packed: tar (gzip) or none.
type ArchiveStrategy struct {
	// Tar packs the artifact as a gzip-compressed tarball (the default).
	Tar *TarStrategy `json:"tar,omitempty"`
	// None stores a single file as is.
	None *NoneStrategy `json:"none,omitempty"`
}

// TarStrategy packs an artifact as tar.gz.
type TarStrategy struct {
	// CompressionLevel is the gzip level (0-9); nil means the gzip default.
	CompressionLevel *int32 `json:"compressionLevel,omitempty"`
}

// NoneStrategy stores an artifact unpacked; it must be a single file.
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
// are uploaded (ConfigMap artifactRepository).
type ArtifactRepository struct {
	// S3 is an S3-compatible repository.
	S3 *S3ArtifactRepository `json:"s3,omitempty"`
}

// S3ArtifactRepository is an S3 bucket plus the key layout of artifacts in it.
type S3ArtifactRepository struct {
	S3Bucket `json:",inline"`
	// KeyFormat is the object key template (DefaultKeyFormat when empty);
	// see KeyFormatVariables for what it may refer to.
	KeyFormat string `json:"keyFormat,omitempty"`
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
	// ResultTruncated says Result was cut to the result size limit.
	ResultTruncated bool `json:"resultTruncated,omitempty"`
	// ExitCode is main's exit code.
	ExitCode *int `json:"exitCode,omitempty"`
}
