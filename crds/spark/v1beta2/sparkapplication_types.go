package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SparkApplicationType is the language the application is written in.
// +kubebuilder:validation:Enum=Java;Python;Scala;R
type SparkApplicationType string

const (
	SparkApplicationTypeJava   SparkApplicationType = "Java"
	SparkApplicationTypeScala  SparkApplicationType = "Scala"
	SparkApplicationTypePython SparkApplicationType = "Python"
	SparkApplicationTypeR      SparkApplicationType = "R"
)

// DeployMode says where the Spark driver runs.
// +kubebuilder:validation:Enum=cluster;client
type DeployMode string

const (
	// DeployModeCluster runs the driver in its own pod (the usual mode).
	DeployModeCluster DeployMode = "cluster"
	// DeployModeClient runs the driver inside the submitting process.
	DeployModeClient DeployMode = "client"
	// DeployModeInClusterClient runs the driver in a pod the user made (driver.podName).
	// The operator's Go API names this mode, but its CRD, and so this one, refuses it in
	// spec.mode: it exists for code, not for manifests.
	DeployModeInClusterClient DeployMode = "in-cluster-client"
)

// RestartPolicyType says when the operator reruns a finished application.
// +kubebuilder:validation:Enum=Never;Always;OnFailure
type RestartPolicyType string

const (
	// RestartPolicyNever: a finished application stays finished (what batch jobs use).
	RestartPolicyNever RestartPolicyType = "Never"
	// RestartPolicyOnFailure: rerun after a failed run or a failed submission, up to the retry limits.
	RestartPolicyOnFailure RestartPolicyType = "OnFailure"
	// RestartPolicyAlways: rerun whenever the application ends.
	RestartPolicyAlways RestartPolicyType = "Always"
)

// SparkApplicationSpec is what to run and how: roughly what a spark-submit command line
// carries, plus the driver and executor pod settings and the operator's own extras (UI
// service and ingress, monitoring, batch scheduling, retries).
type SparkApplicationSpec struct {
	// Type is the language of the application: Java, Scala, Python or R.
	Type SparkApplicationType `json:"type"`

	// SparkVersion is the Spark version of the image, such as 3.5.3.
	SparkVersion string `json:"sparkVersion"`

	// Mode is cluster or client.
	// +optional
	Mode DeployMode `json:"mode,omitempty"`

	// Suspend stops the operator from submitting the application; setting it on a running
	// application makes the operator delete the application's pods.
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// ProxyUser is the user spark-submit impersonates (its --proxy-user flag).
	// +optional
	ProxyUser string `json:"proxyUser,omitempty"`

	// Image is the container image of the driver and the executors, unless their own Image
	// fields say otherwise.
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy applies to every container image of the application.
	// +optional
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets are names of secrets used to pull the images.
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`

	// MainClass is the fully qualified entry class of a Java or Scala application.
	// +optional
	MainClass string `json:"mainClass,omitempty"`

	// MainApplicationFile is the jar, Python or R file to run, such as
	// local:///opt/spark/app.jar.
	MainApplicationFile string `json:"mainApplicationFile"`

	// Arguments are passed to the application in order.
	// +optional
	Arguments []string `json:"arguments,omitempty"`

	// SparkConf holds Spark properties, as spark-submit's --conf would pass them.
	// +optional
	SparkConf map[string]string `json:"sparkConf,omitempty"`

	// HadoopConf holds Hadoop properties; the operator prefixes each key with "spark.hadoop."
	// before handing it to Spark.
	// +optional
	HadoopConf map[string]string `json:"hadoopConf,omitempty"`

	// SparkConfigMap names a ConfigMap of Spark configuration files (SPARK_CONF_DIR).
	// +optional
	SparkConfigMap string `json:"sparkConfigMap,omitempty"`

	// HadoopConfigMap names a ConfigMap of Hadoop configuration files (HADOOP_CONF_DIR).
	// +optional
	HadoopConfigMap string `json:"hadoopConfigMap,omitempty"`

	// Volumes are pod volumes the driver and executors may mount through their volumeMounts.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// Driver describes the driver pod.
	Driver DriverSpec `json:"driver"`

	// Executor describes the executor pods.
	Executor ExecutorSpec `json:"executor"`

	// Deps lists the extra jars, files and packages the application needs.
	// +optional
	Deps Dependencies `json:"deps,omitempty"`

	// RestartPolicy says whether and when the operator reruns the application.
	// +optional
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`

	// NodeSelector applies to both the driver and executor pods. Upstream plans to
	// deprecate it in favour of the per-pod nodeSelector; the two must not be combined.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// FailureRetries is how often a failed application is retried (best effort).
	// +optional
	FailureRetries *int32 `json:"failureRetries,omitempty"`

	// RetryInterval is the base interval, in seconds, between submission retries.
	// +optional
	RetryInterval *int64 `json:"retryInterval,omitempty"`

	// PythonVersion is the major Python version of a Python application's image.
	// +kubebuilder:validation:Enum="2";"3"
	// +optional
	PythonVersion string `json:"pythonVersion,omitempty"`

	// MemoryOverheadFactor is the share of memory reserved for non-JVM use, as a decimal
	// string (for example "0.1"); driver and executor memoryOverhead take precedence.
	// +optional
	MemoryOverheadFactor string `json:"memoryOverheadFactor,omitempty"`

	// Monitoring exposes driver and executor metrics, for example through the Prometheus JMX
	// exporter.
	// +optional
	Monitoring *MonitoringSpec `json:"monitoring,omitempty"`

	// BatchScheduler names the batch scheduler integration the operator uses (such as
	// volcano or yunikorn).
	// +optional
	BatchScheduler string `json:"batchScheduler,omitempty"`

	// TimeToLiveSeconds lets the operator delete the SparkApplication this many seconds after
	// it terminated.
	// +optional
	TimeToLiveSeconds *int64 `json:"timeToLiveSeconds,omitempty"`

	// BatchSchedulerOptions tunes the batch scheduler integration.
	// +optional
	BatchSchedulerOptions *BatchSchedulerConfiguration `json:"batchSchedulerOptions,omitempty"`

	// SparkUIOptions shapes the service, and the ingress if the operator makes one, in front
	// of the Spark web UI.
	// +optional
	SparkUIOptions *SparkUIConfiguration `json:"sparkUIOptions,omitempty"`

	// DriverIngressOptions publishes further driver ports, each through its own service and
	// ingress.
	// +optional
	DriverIngressOptions []DriverIngressConfiguration `json:"driverIngressOptions,omitempty"`

	// DynamicAllocation configures Spark dynamic executor allocation.
	// +optional
	DynamicAllocation *DynamicAllocation `json:"dynamicAllocation,omitempty"`
}

// RestartPolicy is the rerun rule of an application and its retry limits.
type RestartPolicy struct {
	// Type is Never, OnFailure or Always.
	// +optional
	Type RestartPolicyType `json:"type,omitempty"`

	// OnSubmissionFailureRetries bounds the retries of a failed submission (OnFailure only).
	// +kubebuilder:validation:Minimum=0
	// +optional
	OnSubmissionFailureRetries *int32 `json:"onSubmissionFailureRetries,omitempty"`

	// OnFailureRetries bounds the reruns of a failed run.
	// +kubebuilder:validation:Minimum=0
	// +optional
	OnFailureRetries *int32 `json:"onFailureRetries,omitempty"`

	// OnSubmissionFailureRetryInterval is the wait, in seconds, between submission retries.
	// +kubebuilder:validation:Minimum=1
	// +optional
	OnSubmissionFailureRetryInterval *int64 `json:"onSubmissionFailureRetryInterval,omitempty"`

	// OnFailureRetryInterval is the wait, in seconds, between reruns of a failed run.
	// +kubebuilder:validation:Minimum=1
	// +optional
	OnFailureRetryInterval *int64 `json:"onFailureRetryInterval,omitempty"`
}

// BatchSchedulerConfiguration tunes how a batch scheduler (Volcano, YuniKorn) handles the
// application's pods.
type BatchSchedulerConfiguration struct {
	// Queue is the scheduler queue the application is placed in.
	// +optional
	Queue string `json:"queue,omitempty"`

	// PriorityClassName is the PriorityClass the batch scheduler gives the application. The
	// driver and executor pods also have their own priorityClassName.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Resources is the resource amount the scheduler reserves for the application, usually a
	// lower bound.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// SparkUIConfiguration shapes how the Spark web UI of the driver is published.
type SparkUIConfiguration struct {
	// ServicePort is the port of the UI service; the pod side stays spark.ui.port.
	// +optional
	ServicePort *int32 `json:"servicePort,omitempty"`

	// ServicePortName names that port (spark-driver-ui-port unless set). Meshes such as
	// Istio read the protocol from a port's name.
	// +optional
	ServicePortName string `json:"servicePortName,omitempty"`

	// ServiceType is the UI service's type; ClusterIP unless set.
	// +optional
	ServiceType *corev1.ServiceType `json:"serviceType,omitempty"`

	// ServiceAnnotations are added to the UI service.
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// ServiceLabels are added to the UI service.
	// +optional
	ServiceLabels map[string]string `json:"serviceLabels,omitempty"`

	// IngressAnnotations are added to the UI ingress, such as the ingress class to use.
	// +optional
	IngressAnnotations map[string]string `json:"ingressAnnotations,omitempty"`

	// IngressTLS is the TLS section of the UI ingress (hosts and certificate secrets).
	// +optional
	IngressTLS []networkingv1.IngressTLS `json:"ingressTLS,omitempty"`
}

// DriverIngressConfiguration publishes one more port of the driver through a service and an
// ingress.
type DriverIngressConfiguration struct {
	// ServicePort is the port of the service.
	ServicePort *int32 `json:"servicePort"`

	// ServicePortName names the service port.
	ServicePortName string `json:"servicePortName"`

	// ServiceType is the service's type; ClusterIP unless set.
	// +optional
	ServiceType *corev1.ServiceType `json:"serviceType,omitempty"`

	// ServiceAnnotations are added to the service.
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// ServiceLabels are added to the service.
	// +optional
	ServiceLabels map[string]string `json:"serviceLabels,omitempty"`

	// IngressURLFormat is the ingress URL, in which {{$appName}}, {{$appNamespace}} and
	// {{$appId}} stand for the application's name, namespace and Spark application id.
	// +optional
	IngressURLFormat string `json:"ingressURLFormat,omitempty"`

	// IngressAnnotations are added to the ingress.
	// +optional
	IngressAnnotations map[string]string `json:"ingressAnnotations,omitempty"`

	// IngressTLS is the TLS section of the ingress.
	// +optional
	IngressTLS []networkingv1.IngressTLS `json:"ingressTLS,omitempty"`
}

// DynamicAllocation configures Spark's dynamic executor allocation on Kubernetes.
type DynamicAllocation struct {
	// Enabled turns dynamic allocation on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// InitialExecutors is the executor count to start with; the larger of it and
	// executor.instances wins.
	// +optional
	InitialExecutors *int32 `json:"initialExecutors,omitempty"`

	// MinExecutors is the lower bound of the executor count.
	// +optional
	MinExecutors *int32 `json:"minExecutors,omitempty"`

	// MaxExecutors is the upper bound of the executor count.
	// +optional
	MaxExecutors *int32 `json:"maxExecutors,omitempty"`

	// ShuffleTrackingEnabled keeps executors that hold shuffle data alive, which allows
	// dynamic allocation without an external shuffle service.
	// +optional
	ShuffleTrackingEnabled *bool `json:"shuffleTrackingEnabled,omitempty"`

	// ShuffleTrackingTimeout is, in milliseconds, how long such executors are kept.
	// +optional
	ShuffleTrackingTimeout *int64 `json:"shuffleTrackingTimeout,omitempty"`
}

// Dependencies are the files the application needs besides its main file.
type Dependencies struct {
	// Jars are added to the driver and executor classpaths.
	// +optional
	Jars []string `json:"jars,omitempty"`
	// Files are placed in the working directory of each executor.
	// +optional
	Files []string `json:"files,omitempty"`
	// PyFiles are Python files (.py, .zip, .egg) put on the PYTHONPATH.
	// +optional
	PyFiles []string `json:"pyFiles,omitempty"`
	// Packages are Maven coordinates (groupId:artifactId:version) resolved at submission.
	// +optional
	Packages []string `json:"packages,omitempty"`
	// ExcludePackages are groupId:artifactId pairs left out when resolving Packages.
	// +optional
	ExcludePackages []string `json:"excludePackages,omitempty"`
	// Repositories are extra remote Maven repositories searched for Packages.
	// +optional
	Repositories []string `json:"repositories,omitempty"`
	// Archives are extracted into the working directory of each executor.
	// +optional
	Archives []string `json:"archives,omitempty"`
}

// SparkPodSpec holds the settings the driver and the executors share. It is embedded inline
// in DriverSpec and ExecutorSpec, so its fields appear directly under spec.driver and
// spec.executor.
type SparkPodSpec struct {
	// Template is a pod template for settings the other fields cannot express (needs Spark
	// 3.0 or later). The schema does not describe the PodTemplateSpec (it is a schemaless,
	// unknown-field-preserving object), as upstream does, which keeps the CRD small.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`

	// Cores is spark.driver.cores or spark.executor.cores: the task parallelism of the JVM,
	// and the CPU request unless coreRequest is set.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Cores *int32 `json:"cores,omitempty"`

	// CoreLimit is the pod's CPU limit, as a Kubernetes quantity string ("1", "500m").
	// +optional
	CoreLimit string `json:"coreLimit,omitempty"`

	// Memory is the JVM heap to request, in Spark's notation ("512m", "2g").
	// +optional
	Memory string `json:"memory,omitempty"`

	// MemoryLimit overrides the pod's memory limit.
	// +optional
	MemoryLimit string `json:"memoryLimit,omitempty"`

	// MemoryOverhead is the off-heap memory added to Memory, in MiB unless a unit is given.
	// +optional
	MemoryOverhead string `json:"memoryOverhead,omitempty"`

	// GPU asks for GPUs for the pod.
	// +optional
	GPU *GPUSpec `json:"gpu,omitempty"`

	// Image overrides spec.image for this pod.
	// +optional
	Image string `json:"image,omitempty"`

	// ConfigMaps are mounted into the pod.
	// +optional
	ConfigMaps []NamePath `json:"configMaps,omitempty"`

	// Secrets are mounted into the pod.
	// +optional
	Secrets []SecretInfo `json:"secrets,omitempty"`

	// Env is added to the main container's environment.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// EnvVars is the older, map form of Env (name to value). Deprecated upstream: use Env.
	// +optional
	EnvVars map[string]string `json:"envVars,omitempty"`

	// EnvFrom adds whole ConfigMaps or Secrets to the main container's environment.
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// EnvSecretKeyRefs sets variables (the map's keys) from keys of secrets. Deprecated
	// upstream: use Env with valueFrom.secretKeyRef.
	// +optional
	EnvSecretKeyRefs map[string]NameKey `json:"envSecretKeyRefs,omitempty"`

	// Labels are added to the pod.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the pod.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// VolumeMounts mount volumes of spec.volumes into the main container.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// Affinity is the pod's node and pod (anti-)affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations are the pod's tolerations.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PodSecurityContext is the pod-level security context.
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// SecurityContext is the main container's security context.
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`

	// SchedulerName is the scheduler that places the pod.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Sidecars are more containers that run beside the main Spark container.
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`

	// InitContainers run to completion before the main Spark container starts.
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`

	// HostNetwork runs the pod in the node's network namespace.
	// +optional
	HostNetwork *bool `json:"hostNetwork,omitempty"`

	// NodeSelector is the pod's node selector. It must not be combined with spec.nodeSelector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// DNSConfig is the pod's DNS configuration.
	// +optional
	DNSConfig *corev1.PodDNSConfig `json:"dnsConfig,omitempty"`

	// TerminationGracePeriodSeconds is the pod's grace period on deletion.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// ServiceAccount is the Kubernetes service account the pod runs as. The driver's needs
	// the rights to create and delete executor pods.
	// +optional
	ServiceAccount string `json:"serviceAccount,omitempty"`

	// HostAliases are extra /etc/hosts entries of the pod.
	// +optional
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`

	// ShareProcessNamespace lets the pod's containers see each other's processes.
	// +optional
	ShareProcessNamespace *bool `json:"shareProcessNamespace,omitempty"`
}

// DriverSpec describes the driver pod.
type DriverSpec struct {
	SparkPodSpec `json:",inline"`

	// PodName names a driver pod the user created (in-cluster client mode only).
	//
	// The pattern is upstream's, doubled backslash and all: it was meant to be a DNS
	// subdomain, but "\\." matches a backslash and any character, and the pattern is not
	// anchored, so the API server only checks that the name holds a lowercase letter or a
	// digit. The intended `\.` would accept exactly the same names, for the same reason.
	// +kubebuilder:validation:Pattern=`[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`
	// +optional
	PodName string `json:"podName,omitempty"`

	// CoreRequest is the driver pod's CPU request as a quantity string; Spark's
	// spark.kubernetes.driver.request.cores (Spark 3.0 or later). Without it, cores is
	// requested.
	// +optional
	CoreRequest string `json:"coreRequest,omitempty"`

	// JavaOptions are extra JVM options for the driver.
	// +optional
	JavaOptions string `json:"javaOptions,omitempty"`

	// Lifecycle holds postStart and preStop hooks of the driver container.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`

	// KubernetesMaster is the API server URL the driver talks to; by default the in-cluster
	// address.
	// +optional
	KubernetesMaster string `json:"kubernetesMaster,omitempty"`

	// ServiceAnnotations are added to the headless service executors use to reach the driver.
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// ServiceLabels are added to that service.
	// +optional
	ServiceLabels map[string]string `json:"serviceLabels,omitempty"`

	// Ports are extra container ports of the driver.
	// +optional
	Ports []Port `json:"ports,omitempty"`

	// PriorityClassName is the PriorityClass of the driver pod.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ExecutorSpec describes the executor pods.
type ExecutorSpec struct {
	SparkPodSpec `json:",inline"`

	// Instances is the number of executors.
	// +kubebuilder:validation:Minimum=1
	// +optional
	Instances *int32 `json:"instances,omitempty"`

	// CoreRequest is each executor pod's CPU request as a quantity string; Spark's
	// spark.kubernetes.executor.request.cores. Without it, cores is requested.
	// +optional
	CoreRequest string `json:"coreRequest,omitempty"`

	// JavaOptions are extra JVM options for the executors.
	// +optional
	JavaOptions string `json:"javaOptions,omitempty"`

	// Lifecycle holds postStart and preStop hooks of the executor container.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`

	// DeleteOnTermination says whether executor pods are deleted when they end (Spark's
	// spark.kubernetes.executor.deleteOnTermination).
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`

	// Ports are extra container ports of the executors.
	// +optional
	Ports []Port `json:"ports,omitempty"`

	// PriorityClassName is the PriorityClass of the executor pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// GPUSpec asks for GPUs of one resource name.
type GPUSpec struct {
	// Name is the extended resource name, such as nvidia.com/gpu.
	Name string `json:"name"`
	// Quantity is how many GPUs the pod requests.
	Quantity int64 `json:"quantity"`
}

// NamePath mounts the named object at a path.
type NamePath struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// SecretType says how the operator treats a mounted secret.
type SecretType string

const (
	// SecretTypeGCPServiceAccount also sets GOOGLE_APPLICATION_CREDENTIALS.
	SecretTypeGCPServiceAccount SecretType = "GCPServiceAccount"
	// SecretTypeHadoopDelegationToken also sets HADOOP_TOKEN_FILE_LOCATION.
	SecretTypeHadoopDelegationToken SecretType = "HadoopDelegationToken"
	// SecretTypeGeneric is only mounted.
	SecretTypeGeneric SecretType = "Generic"
)

// SecretInfo mounts a secret at a path.
type SecretInfo struct {
	Name string     `json:"name"`
	Path string     `json:"path"`
	Type SecretType `json:"secretType"`
}

// NameKey points at one key of a secret.
type NameKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Port is an extra container port of a driver or executor.
type Port struct {
	Name          string `json:"name"`
	Protocol      string `json:"protocol"`
	ContainerPort int32  `json:"containerPort"`
}

// MonitoringSpec says which metrics the application exposes and how Spark's metric system
// is configured.
type MonitoringSpec struct {
	// ExposeDriverMetrics publishes the driver's metrics.
	ExposeDriverMetrics bool `json:"exposeDriverMetrics"`

	// ExposeExecutorMetrics publishes the executors' metrics.
	ExposeExecutorMetrics bool `json:"exposeExecutorMetrics"`

	// MetricsProperties is the text of a metrics.properties file for Spark's metric system;
	// without it the image's own file is used.
	// +optional
	MetricsProperties string `json:"metricsProperties,omitempty"`

	// MetricsPropertiesFile is where that file lies inside the container
	// (/etc/metrics/conf/metrics.properties unless set).
	// +optional
	MetricsPropertiesFile string `json:"metricsPropertiesFile,omitempty"`

	// Prometheus runs the Prometheus JMX exporter as a Java agent in the pods.
	// +optional
	Prometheus *PrometheusSpec `json:"prometheus,omitempty"`
}

// PrometheusSpec configures the Prometheus JMX exporter agent.
type PrometheusSpec struct {
	// JmxExporterJar is the exporter jar's path inside the image.
	JmxExporterJar string `json:"jmxExporterJar"`

	// Port is where the exporter serves metrics (8090 unless set).
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=49151
	// +optional
	Port *int32 `json:"port,omitempty"`

	// PortName names that container port (jmx-exporter unless set).
	// +optional
	PortName string `json:"portName,omitempty"`

	// ConfigFile is the path of an exporter configuration inside the image; it wins over
	// Configuration.
	// +optional
	ConfigFile string `json:"configFile,omitempty"`

	// Configuration is the exporter configuration's text, used when ConfigFile is unset;
	// without either the image's default applies.
	// +optional
	Configuration string `json:"configuration,omitempty"`
}

// SparkApplication is one Spark application run by the Kubeflow Spark operator.
//
// sparkoperator.k8s.io is a protected *.k8s.io group: the API server refuses a CRD in it
// without the api-approved.kubernetes.io annotation. The annotation carries the approval
// the upstream CRD uses.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sparkapp,singular=sparkapplication
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/kubeflow/spark-operator/pull/1298"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.applicationState.state`
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.status.executionAttempts`
// +kubebuilder:printcolumn:name="Start",type=string,JSONPath=`.status.lastSubmissionAttemptTime`
// +kubebuilder:printcolumn:name="Finish",type=string,JSONPath=`.status.terminationTime`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SparkApplication struct {
	metav1.TypeMeta `json:",inline"`
	// The schema requires metadata, as upstream's does; every stored object has it.
	metav1.ObjectMeta `json:"metadata"`

	Spec SparkApplicationSpec `json:"spec"`
	// +optional
	Status SparkApplicationStatus `json:"status,omitempty"`
}

// SparkApplicationList is a list of SparkApplications.
// +kubebuilder:object:root=true
type SparkApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SparkApplication `json:"items"`
}
