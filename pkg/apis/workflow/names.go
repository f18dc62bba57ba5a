package workflow

// This file is the one place where the controller side (pkg/podspec) and the
// executor side (cmd/argoexec, executor/...) agree on names: environment
// variables, annotation and label keys, container names and mount paths.
// Neither side spells these strings anywhere else, so the two cannot drift.

// Environment variables that the pod builder sets on the init and wait
// containers and that argoexec reads.
const (
	// EnvPodName is the name of the workflow pod (downward API metadata.name).
	EnvPodName = "ARGO_POD_NAME"
	// EnvPodNamespace is the namespace of the workflow pod (downward API metadata.namespace).
	EnvPodNamespace = "ARGO_POD_NAMESPACE"
	// EnvPodUID is the UID of the workflow pod (downward API metadata.uid).
	EnvPodUID = "ARGO_POD_UID"
	// EnvContainerRuntimeExecutor names the backend wait uses: k8sapi, kubelet or docker.
	EnvContainerRuntimeExecutor = "ARGO_CONTAINER_RUNTIME_EXECUTOR"
	// EnvTemplatePath is the file holding the template as JSON. The pod builder
	// puts the template in the pod annotation AnnotationTemplate and projects it
	// into a downward-API volume, so its size is bounded by the annotation
	// budget, not by the kernel's ARG_MAX (argo-workflows #7586).
	EnvTemplatePath = "ARGO_TEMPLATE_PATH"
	// EnvKubeletHost is the kubelet's address (downward API status.hostIP).
	EnvKubeletHost = "ARGO_KUBELET_HOST"
	// EnvKubeletPort is the kubelet's HTTPS port (ConfigMap kubeletPort).
	EnvKubeletPort = "ARGO_KUBELET_PORT"
	// EnvKubeletInsecure, when "true", skips verification of the kubelet's
	// serving certificate (ConfigMap kubeletInsecure).
	EnvKubeletInsecure = "ARGO_KUBELET_INSECURE"
	// EnvKubeletCAFile is the CA bundle that verifies the kubelet's serving
	// certificate (ConfigMap kubeletCAFile); empty means the in-cluster CA.
	EnvKubeletCAFile = "ARGO_KUBELET_CA_FILE"
	// EnvDockerSockPath is the Docker Engine socket path inside the wait
	// container (ConfigMap dockerSockPath).
	EnvDockerSockPath = "ARGO_DOCKER_SOCK_PATH"
	// EnvWorkflowName is the workflow the pod belongs to (for artifact keys).
	EnvWorkflowName = "ARGO_WORKFLOW_NAME"
	// EnvArtifactRepository is the ConfigMap's artifactRepository as JSON,
	// without credentials; set on init and wait only.
	EnvArtifactRepository = "ARGO_ARTIFACT_REPOSITORY"
	// EnvS3AccessKey is the S3 access key ID (secretKeyRef of
	// artifactRepository.s3.accessKeySecret); set on init and wait only,
	// never on main.
	EnvS3AccessKey = "ARGO_S3_ACCESS_KEY"
	// EnvS3SecretKey is the S3 secret access key (secretKeyRef of
	// artifactRepository.s3.secretKeySecret); init and wait only.
	EnvS3SecretKey = "ARGO_S3_SECRET_KEY"
	// EnvGCSServiceAccountKey is the service account's JSON key of a gcs
	// repository (secretKeyRef of artifactRepository.gcs.serviceAccountKeySecret);
	// set on init and wait only.
	EnvGCSServiceAccountKey = "ARGO_GCS_SERVICE_ACCOUNT_KEY"
	// EnvSidecarMode is native or legacy (ConfigMap sidecarMode): in legacy
	// mode wait stops the user sidecars itself.
	EnvSidecarMode = "ARGO_SIDECAR_MODE"
)

// Annotation and label keys.
const (
	// AnnotationTemplate holds the template JSON on the pod.
	AnnotationTemplate = "workflows.argoproj.io/template"
	// AnnotationScript holds a script template's source (substituted) on
	// the pod, projected into main as ScriptSourcePath; the template in
	// AnnotationTemplate then carries the script without its source, so the
	// source counts once against the annotation budget.
	AnnotationScript = "workflows.argoproj.io/script"
	// AnnotationOutputs holds the outputs JSON that wait reports.
	AnnotationOutputs = "workflows.argoproj.io/outputs"
	// AnnotationProgress holds a step's self-reported progress (N/M) when
	// Argo's task results are forbidden.
	AnnotationProgress = "workflows.argoproj.io/progress"
	// LabelContainerRuntimeExecutor on a workflow picks its backend directly.
	LabelContainerRuntimeExecutor = "workflows.argoproj.io/container-runtime-executor"
	// LabelWorkflow names the workflow a pod belongs to.
	LabelWorkflow = "workflows.argoproj.io/workflow"
	// LabelControllerInstanceID labels what belongs to one of several Argo
	// controllers (ConfigMap instanceID); wait puts it on its task result.
	LabelControllerInstanceID = "workflows.argoproj.io/controller-instanceid"
	// LabelCompleted is "true" on Argo's WorkflowTaskSet (and pods) once the
	// workflow is done: the agent stops when it sees it.
	LabelCompleted = "workflows.argoproj.io/completed"
)

// Argo Workflows v3.3.8's controller protocol: the environment it sets on
// init and wait (argo-v3.3-protocol.md §1.5) and the paths of its pods.
// argoexec speaks it when ARGO_TEMPLATE is set.
const (
	// EnvArgoTemplate is the template JSON itself, on every container.
	EnvArgoTemplate = "ARGO_TEMPLATE"
	// EnvArgoNodeID is the node's ID: the name of its WorkflowTaskResult.
	EnvArgoNodeID = "ARGO_NODE_ID"
	// EnvArgoIncludeScriptOutput, "true" or "false", says whether wait
	// reports main's stdout as the result.
	EnvArgoIncludeScriptOutput = "ARGO_INCLUDE_SCRIPT_OUTPUT"
	// EnvArgoDeadline is when main must have exited, RFC 3339; the zero
	// time 0001-01-01T00:00:00Z means none.
	EnvArgoDeadline = "ARGO_DEADLINE"
	// EnvArgoInstanceID is the controller's instanceID, for task-result labels.
	EnvArgoInstanceID = "ARGO_INSTANCE_ID"
	// EnvArgoContainerName is the name of the container it is set on.
	EnvArgoContainerName = "ARGO_CONTAINER_NAME"
	// EnvArgoProgressFile is where main may write N/M progress lines.
	EnvArgoProgressFile = "ARGO_PROGRESS_FILE"
	// EnvArgoProgressPatchTick is how often wait reports progress (a Go
	// duration); set, with EnvArgoProgressFileTick, only when both are on.
	EnvArgoProgressPatchTick = "ARGO_PROGRESS_PATCH_TICK_DURATION"
	// EnvArgoProgressFileTick is how often wait reads the progress file.
	EnvArgoProgressFileTick = "ARGO_PROGRESS_FILE_TICK_DURATION"
	// EnvStorageEmulatorHost points the gcs store at a GCS emulator
	// (host[:port] or a URL), talked to without credentials, as Google's
	// storage client reads it.
	EnvStorageEmulatorHost = "STORAGE_EMULATOR_HOST"
	// EnvGCEMetadataHost is the GCE metadata server's host[:port] the gcs
	// store gets its workload-identity token from, as Google's metadata
	// client reads it.
	EnvGCEMetadataHost = "GCE_METADATA_HOST"
	// EnvArgoTerminationGrace is the pod's terminationGracePeriodSeconds,
	// set on wait only when the pod spec sets it.
	EnvArgoTerminationGrace = "ARGO_TERMINATION_GRACE_PERIOD_SECONDS"
	// EnvArgoPluginNames is, on Argo's agent pod, the executor plugins'
	// sidecar names as a JSON array of strings (null when there are none).
	EnvArgoPluginNames = "ARGO_PLUGIN_NAMES"
	// EnvArgoPluginAddresses is, on the agent pod, each plugin's address
	// (http://localhost:PORT), a JSON array in EnvArgoPluginNames' order.
	EnvArgoPluginAddresses = "ARGO_PLUGIN_ADDRESSES"
	// EnvArgoAgentTaskWorkers is how many tasks the agent runs at once
	// (default 16, executor/agent's DefaultTaskWorkers); set only when the
	// controller has it.
	EnvArgoAgentTaskWorkers = "ARGO_AGENT_TASK_WORKERS"
	// EnvArgoAgentPatchRate is how often, at most, the agent patches its
	// results into the WorkflowTaskSet (a Go duration; default 10s,
	// executor/agent's DefaultPatchRate, the controller's requeue time).
	EnvArgoAgentPatchRate = "ARGO_AGENT_PATCH_RATE"
	// ArgoStagingScript is where init stages a script's source under Argo's
	// controller (the argo-staging emptyDir, mounted in init and main).
	ArgoStagingScript = "/argo/staging/script"
	// ArgoInputArtifactsPath is where init writes input artifact NAME under
	// Argo's controller (the input-artifacts emptyDir).
	ArgoInputArtifactsPath = "/argo/inputs/artifacts"
	// ArgoSecretsPath is where Argo's controller mounts every secret an
	// artifact refers to, as ArgoSecretsPath/NAME/KEY.
	ArgoSecretsPath = "/argo/secret"
	// TerminationLogPath is where argoexec writes its error for the
	// controller and `kubectl describe` (the container's
	// terminationMessagePath default).
	TerminationLogPath = "/dev/termination-log"
)

// Container names in a workflow pod.
const (
	// MainContainerName is the user's main container.
	MainContainerName = "main"
	// MainLogsArtifactName names the output artifact of main's archived
	// log (Argo's archiveLogs), as Argo v3.3.8 reports it.
	MainLogsArtifactName = "main-logs"
	// MainLogFileName is the archived log's file name: its key is the
	// archive location's key joined with it.
	MainLogFileName = "main.log"
	// WaitContainerName is the argoexec wait sidecar.
	WaitContainerName = "wait"
	// InitContainerName is the argoexec init container.
	InitContainerName = "init"
)

// Volumes and paths.
const (
	// VarRunArgoVolume is the emptyDir shared by init, wait and main.
	VarRunArgoVolume = "var-run-argo"
	// VarRunArgoPath is where VarRunArgoVolume is mounted in every container.
	VarRunArgoPath = "/var/run/argo"
	// StagingPath is where main sees a script template's source: the
	// ScriptVolume, mounted there read-only.
	StagingPath = VarRunArgoPath + "/staging"
	// ScriptSourcePath is the script that main runs.
	ScriptSourcePath = StagingPath + "/script"
	// ScriptVolume is the downward-API volume that projects AnnotationScript
	// into main at StagingPath, so that a script needs no init container.
	ScriptVolume = "script"
	// PodMetadataVolume is the downward-API volume carrying the template.
	PodMetadataVolume = "podmetadata"
	// PodMetadataPath is where PodMetadataVolume is mounted in init and wait.
	PodMetadataPath = "/argo/podmetadata"
	// TemplateFile is the default value of EnvTemplatePath.
	TemplateFile = PodMetadataPath + "/template"
	// MainCtrFSPath is where main's volume mounts are mirrored into wait.
	MainCtrFSPath = "/mainctrfs"
	// InputArtifactsVolume is the emptyDir init loads input artifacts into.
	// The pod builder mounts it whole in init at InputArtifactsPath, and into
	// main with subPath NAME at each input artifact's path.
	InputArtifactsVolume = "input-artifacts"
	// InputArtifactsPath is where init sees InputArtifactsVolume; artifact
	// NAME goes to InputArtifactsPath/NAME (a file, or a directory for an
	// unpacked tarball).
	InputArtifactsPath = "/inputs/artifacts"
	// ExecutorTmpVolume is an emptyDir mounted at ExecutorTmpPath in init and
	// wait only: their private scratch space (the argoexec image has no
	// writable /tmp, and main must not reach what wait stages there).
	ExecutorTmpVolume = "argoexec-tmp"
	// ExecutorTmpPath is where ExecutorTmpVolume is mounted.
	ExecutorTmpPath = "/tmp"
	// DockerSockVolume is the hostPath volume for the docker socket.
	DockerSockVolume = "docker-sock"
	// ServiceAccountTokenPath is the projected service-account token that
	// k8sapi and kubelet authenticate with (re-read on every request: it rotates).
	ServiceAccountTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	// ServiceAccountCAPath is the in-cluster CA bundle.
	ServiceAccountCAPath = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// Backend names, the values of ConfigMap containerRuntimeExecutor and of
// EnvContainerRuntimeExecutor: the built-in backends' registrations (their
// packages under executor/) use them, and tests and messages name them. The
// list of backends a binary has is executor/backends.All, not here; a new
// backend may spell its name in its own package.
const (
	// ExecutorK8sAPI reaches the main container through the API server.
	ExecutorK8sAPI = "k8sapi"
	// ExecutorKubelet reaches it through the node's kubelet HTTPS API.
	ExecutorKubelet = "kubelet"
	// ExecutorDocker reaches it through the node's docker.sock.
	ExecutorDocker = "docker"
)

// Sidecar modes, the values of ConfigMap sidecarMode.
const (
	// SidecarModeNative runs user sidecars as init containers with
	// restartPolicy Always (Kubernetes >= 1.29): the kubelet stops them.
	SidecarModeNative = "native"
	// SidecarModeLegacy runs them as plain containers that wait must Kill.
	SidecarModeLegacy = "legacy"
)

// MaxAnnotationBytes is the API server's limit on all annotations of an
// object together (256 KiB).
const MaxAnnotationBytes = 256 * 1024

// Defaults both sides use; each is spelled here and nowhere else.
const (
	// DefaultKubeletPort is the kubelet's HTTPS port when ConfigMap
	// kubeletPort is unset (and when Argo's controller passes ARGO_KUBELET_PORT=0).
	DefaultKubeletPort = 10250
	// DefaultDockerSockPath is the Docker Engine socket on the node and in wait
	// when ConfigMap dockerSockPath is unset.
	DefaultDockerSockPath = "/var/run/docker.sock"
	// MaxFileBytes bounds one output parameter file read through a backend
	// (GetFileContents) and a script result: the outputs report cannot hold more.
	MaxFileBytes = MaxAnnotationBytes
)

// EnvDoc documents one environment variable of init and wait.
type EnvDoc struct {
	// Name is the variable's name.
	Name string
	// Who says which containers the pod builder sets it on.
	Who string
	// Doc says what it holds.
	Doc string
}

// EnvVars documents every environment variable argoexec reads; the README's
// table is generated from it and a test keeps the two in step.
func EnvVars() []EnvDoc {
	return []EnvDoc{
		{EnvPodName, "init, wait", "Name of the workflow pod (downward API metadata.name)."},
		{EnvPodNamespace, "init, wait", "Namespace of the pod (downward API metadata.namespace); falls back to the service account's namespace file."},
		{EnvPodUID, "init, wait", "UID of the pod (downward API metadata.uid); the docker backend matches it."},
		{EnvContainerRuntimeExecutor, "init, wait", "Backend: docker, emissary, k8sapi or kubelet (picked by the ConfigMap and the workflow's labels)."},
		{EnvTemplatePath, "init, wait", "File holding the template JSON; default " + TemplateFile + ", projected from the pod annotation " + AnnotationTemplate + "."},
		{EnvSidecarMode, "init, wait", "native or legacy (ConfigMap sidecarMode); in legacy mode wait kills the sidecars."},
		{EnvWorkflowName, "init, wait; Argo: agent", "Workflow the pod belongs to; fills {{workflow.name}} in artifact keys; `agent main` watches the WorkflowTaskSet of that name."},
		{EnvArtifactRepository, "init, wait", "ConfigMap artifactRepository as JSON, without credentials."},
		{EnvS3AccessKey, "init, wait", "S3 access key ID, from the Secret named by artifactRepository.s3.accessKeySecret. Never set on main."},
		{EnvS3SecretKey, "init, wait", "S3 secret access key, from artifactRepository.s3.secretKeySecret. Never set on main."},
		{EnvGCSServiceAccountKey, "init, wait", "Service account's JSON key of a gcs repository, from artifactRepository.gcs.serviceAccountKeySecret. Never set on main."},
		{EnvKubeletHost, "wait (kubelet)", "Kubelet address (downward API status.hostIP)."},
		{EnvKubeletPort, "wait (kubelet)", "Kubelet HTTPS port (ConfigMap kubeletPort, default 10250)."},
		{EnvKubeletInsecure, "wait (kubelet)", "true skips verification of the kubelet's certificate (ConfigMap kubeletInsecure)."},
		{EnvKubeletCAFile, "wait (kubelet)", "CA bundle for the kubelet's certificate (ConfigMap kubeletCAFile); empty means the service-account CA."},
		{EnvDockerSockPath, "wait (docker)", "Docker Engine socket inside wait (ConfigMap dockerSockPath)."},
		{EnvArgoTemplate, "Argo: every container", "The template JSON; its presence selects Argo's protocol (a mix with ARGO_TEMPLATE_PATH, ARGO_POD_NAMESPACE, ARGO_ARTIFACT_REPOSITORY, ARGO_S3_* or ARGO_SIDECAR_MODE is an error)."},
		{EnvArgoNodeID, "Argo: every container", "Node ID: the name of the WorkflowTaskResult wait reports to."},
		{EnvArgoIncludeScriptOutput, "Argo: every container", "true: wait reports main's stdout as the result (container and script templates)."},
		{EnvArgoDeadline, "Argo: every container", "RFC 3339 time by which main must have exited (wait stops it then and saves); 0001-01-01T00:00:00Z means none."},
		{EnvArgoInstanceID, "Argo: init, wait", "The controller's instanceID, labelled on the task result."},
		{EnvArgoProgressFile, "Argo: every container", "File main may write N/M progress lines to; wait reports the last valid one."},
		{EnvArgoProgressFileTick, "Argo: every container", "How often wait reads the progress file (Go duration)."},
		{EnvArgoProgressPatchTick, "Argo: every container", "How often, at most, wait reports progress (Go duration)."},
		{EnvArgoTerminationGrace, "Argo: wait", "The pod's terminationGracePeriodSeconds: grace between SIGTERM and SIGKILL when wait stops sidecars."},
		{EnvStorageEmulatorHost, "init, wait (gcs)", "A GCS emulator (host[:port], plain HTTP, or a URL) that gcs artifacts go to, without credentials, as Google's client does; unset means Google Cloud Storage. Under argoexec-step, set it in the ConfigMap's executor.env."},
		{EnvGCEMetadataHost, "init, wait (gcs)", "The GCE metadata server (host[:port]) that gives gcs artifacts without serviceAccountKeySecret their workload-identity token; default 169.254.169.254."},
		{EnvArgoPluginNames, "Argo: agent", "Executor plugins' sidecar names, a JSON array; `agent init` writes a token for each to /var/run/argo/NAME/token."},
		{EnvArgoPluginAddresses, "Argo: agent", "Each plugin's address, a JSON array in the names' order: `agent main` posts plugin templates to ADDRESS/api/v1/template.execute."},
		{EnvArgoAgentTaskWorkers, "Argo: agent", "How many HTTP or plugin tasks `agent main` runs at once (default 16)."},
		{EnvArgoAgentPatchRate, "Argo: agent", "How often `agent main` patches results into the WorkflowTaskSet (Go duration, default 10s)."},
		{EnvArgoContainerName, "main and sidecars (emissary); Argo: every container", "The container's own name: `argoexec emissary` keeps the container's exit code, output and signal files under /var/run/argo/ctr/NAME."},
	}
}
