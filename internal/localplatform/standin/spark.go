package standin

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sparkv1beta2 "slotplane/crds/spark/v1beta2"
)

// The container names spark-submit gives the driver and executor pods.
const (
	SparkDriverContainer   = "spark-kubernetes-driver"
	SparkExecutorContainer = "spark-kubernetes-executor"
)

// Spark's floor under the memory overhead, in MiB, unless spark.<role>.minMemoryOverhead
// says otherwise.
const sparkMinOverheadMiB = 384

// SparkDriverName is the driver pod's name: driver.podName, or <app>-driver.
func SparkDriverName(app *sparkv1beta2.SparkApplication) string {
	if app.Spec.Driver.PodName != "" {
		return app.Spec.Driver.PodName
	}
	return app.Name + "-driver"
}

// SparkExecutorName is the name of executor n (counted from 1).
func SparkExecutorName(app *sparkv1beta2.SparkApplication, n int) string {
	return fmt.Sprintf("%s-exec-%d", app.Name, n)
}

// SparkExecutorCount is how many executors the driver asks for: executor.instances, else
// spark.executor.instances, else 1.
func SparkExecutorCount(app *sparkv1beta2.SparkApplication) int {
	if n := app.Spec.Executor.Instances; n != nil && *n > 0 {
		return int(*n)
	}
	if n, err := strconv.Atoi(app.Spec.SparkConf["spark.executor.instances"]); err == nil && n > 0 {
		return n
	}
	return 1
}

// SparkAppID is the application id Spark would report (spark-app-selector,
// status.sparkApplicationId); it is derived from the application's UID, so it stays the same
// across restarts of the stand-in.
func SparkAppID(app *sparkv1beta2.SparkApplication) string {
	return "spark-" + hashOf(app.UID, 32)
}

// sparkSubmissionID is the operator's id of the one submission of an application.
func sparkSubmissionID(app *sparkv1beta2.SparkApplication) string {
	h := hashOf(app.UID+"/submission", 32)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// SparkDriverPod is the driver pod spark-submit makes for an application.
func SparkDriverPod(app *sparkv1beta2.SparkApplication) (*corev1.Pod, error) {
	d, conf := &app.Spec.Driver, app.Spec.SparkConf
	base := templateContainer(d.Template, SparkDriverContainer, true)
	res, err := sparkResources(app, RoleDriver, &d.SparkPodSpec, d.CoreRequest, templateResources(base))
	if err != nil {
		return nil, fmt.Errorf("driver: %w", err)
	}
	tl, ta := templateMeta(d.Template)
	annotations, err := withSim(merged(ta, d.Annotations), app.Annotations)
	if err != nil {
		return nil, fmt.Errorf("driver: %w", err)
	}
	image := firstOf(d.Image, app.Spec.Image, conf["spark.kubernetes.driver.container.image"], conf["spark.kubernetes.container.image"], imageOf(base))
	if image == "" {
		return nil, errors.New("driver: no container image (spec.image or spec.driver.image)")
	}
	pl := placement{
		schedulerName:     firstOf(d.SchedulerName, conf["spark.kubernetes.scheduler.name"]),
		priorityClassName: d.PriorityClassName,
		affinity:          d.Affinity,
		tolerations:       d.Tolerations,
		nodeSelector:      merged(app.Spec.NodeSelector, d.NodeSelector),
	}.or(d.Template)
	return newPod(podParts{
		namespace: app.Namespace, name: SparkDriverName(app),
		app: app.Name, uid: app.UID, role: RoleDriver,
		container: SparkDriverContainer, image: image,
		labels:      merged(tl, d.Labels, sparkLabels(app, RoleDriver)),
		annotations: annotations,
		resources:   res,
		env:         concatEnv(envOf(base), d.Env, envFromConf(conf, "spark.kubernetes.driverEnv.")),
		placement:   pl,
		serviceAccount: firstOf(d.ServiceAccount, conf["spark.kubernetes.authenticate.driver.serviceAccountName"],
			templateServiceAccount(d.Template)),
		gracePeriod: d.TerminationGracePeriodSeconds,
		owner:       *metav1.NewControllerRef(app, sparkv1beta2.GroupVersion.WithKind(sparkv1beta2.SparkApplicationKind)),
	}), nil
}

// SparkExecutorPod is executor n (counted from 1) as the driver asks for it; it is owned by
// the driver pod.
func SparkExecutorPod(app *sparkv1beta2.SparkApplication, driver *corev1.Pod, n int) (*corev1.Pod, error) {
	e, conf := &app.Spec.Executor, app.Spec.SparkConf
	base := templateContainer(e.Template, SparkExecutorContainer, true)
	res, err := sparkResources(app, RoleExecutor, &e.SparkPodSpec, e.CoreRequest, templateResources(base))
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	image := firstOf(e.Image, app.Spec.Image, conf["spark.kubernetes.executor.container.image"], conf["spark.kubernetes.container.image"], imageOf(base))
	if image == "" {
		return nil, errors.New("executor: no container image (spec.image or spec.executor.image)")
	}
	tl, ta := templateMeta(e.Template)
	labels := merged(tl, e.Labels, sparkLabels(app, RoleExecutor), map[string]string{
		"spark-exec-id":                 strconv.Itoa(n),
		"spark-exec-resourceprofile-id": "0",
	})
	pl := placement{
		schedulerName:     firstOf(e.SchedulerName, conf["spark.kubernetes.scheduler.name"]),
		priorityClassName: e.PriorityClassName,
		affinity:          e.Affinity,
		tolerations:       e.Tolerations,
		nodeSelector:      merged(app.Spec.NodeSelector, e.NodeSelector),
	}.or(e.Template)
	yes := true
	return newPod(podParts{
		namespace: app.Namespace, name: SparkExecutorName(app, n),
		app: app.Name, uid: app.UID, role: RoleExecutor,
		container: SparkExecutorContainer, image: image,
		labels:         labels,
		annotations:    withoutSim(merged(ta, e.Annotations)),
		resources:      res,
		env:            concatEnv(envOf(base), e.Env, envFromConf(conf, "spark.executorEnv.")),
		placement:      pl,
		serviceAccount: firstOf(e.ServiceAccount, templateServiceAccount(e.Template)),
		gracePeriod:    e.TerminationGracePeriodSeconds,
		owner:          metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: driver.Name, UID: driver.UID, Controller: &yes},
	}), nil
}

// sparkLabels are the labels Spark and the operator put on the pods of an application.
func sparkLabels(app *sparkv1beta2.SparkApplication, role string) map[string]string {
	return map[string]string{
		"spark-role":                    role,
		"spark-app-name":                labelValue(app.Name),
		"spark-app-selector":            SparkAppID(app),
		"sparkoperator.k8s.io/app-name": labelValue(app.Name),
		"sparkoperator.k8s.io/launched-by-spark-operator": "true",
		"sparkoperator.k8s.io/submission-id":              sparkSubmissionID(app),
	}
}

// sparkResources are a driver's or executor's container resources as Spark sets them on top
// of the template's: the cpu request (coreRequest, else cores, else 1), the cpu limit
// (coreLimit), memory plus overhead as both memory request and limit (memoryLimit overrides
// the limit), and a GPU limit.
func sparkResources(app *sparkv1beta2.SparkApplication, role string, p *sparkv1beta2.SparkPodSpec, coreRequest string, base corev1.ResourceRequirements) (corev1.ResourceRequirements, error) {
	conf := app.Spec.SparkConf
	cpu := firstOf(coreRequest, conf["spark.kubernetes."+role+".request.cores"])
	if cpu == "" {
		cpu = firstOf(conf["spark."+role+".cores"], "1")
		if p.Cores != nil {
			cpu = strconv.Itoa(int(*p.Cores))
		}
	}
	cpuQ, err := resource.ParseQuantity(cpu)
	if err != nil || cpuQ.Sign() <= 0 {
		return corev1.ResourceRequirements{}, fmt.Errorf("cpu request %q is not a positive quantity", cpu)
	}
	memMiB, err := sparkMemoryMiB(app, role, p)
	if err != nil {
		return corev1.ResourceRequirements{}, err
	}
	res := base
	res.Requests[corev1.ResourceCPU] = cpuQ
	res.Requests[corev1.ResourceMemory] = mebibytes(memMiB)
	res.Limits[corev1.ResourceMemory] = mebibytes(memMiB)
	if limit := firstOf(p.CoreLimit, conf["spark.kubernetes."+role+".limit.cores"]); limit != "" {
		q, err := resource.ParseQuantity(limit)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("coreLimit %q: %w", limit, err)
		}
		res.Limits[corev1.ResourceCPU] = q
	}
	if p.MemoryLimit != "" {
		q, err := resource.ParseQuantity(p.MemoryLimit)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("memoryLimit %q: %w", p.MemoryLimit, err)
		}
		res.Limits[corev1.ResourceMemory] = q
	}
	if g := p.GPU; g != nil && g.Name != "" && g.Quantity > 0 {
		res.Limits[corev1.ResourceName(g.Name)] = *resource.NewQuantity(g.Quantity, resource.DecimalSI)
	}
	return res, nil
}

// sparkMemoryMiB is the memory Spark asks for, in MiB: the JVM's memory (memory, default
// 1g) plus the overhead. The overhead is memoryOverhead when given, else the overhead factor
// times the memory, but at least 384 MiB. Spark works in whole MiB and rounds down.
func sparkMemoryMiB(app *sparkv1beta2.SparkApplication, role string, p *sparkv1beta2.SparkPodSpec) (int64, error) {
	conf := app.Spec.SparkConf
	memory := firstOf(p.Memory, conf["spark."+role+".memory"], "1g")
	heap, err := parseMemory(memory, 1<<20)
	if err != nil {
		return 0, fmt.Errorf("memory: %w", err)
	}
	heapMiB := heap >> 20
	if overhead := firstOf(p.MemoryOverhead, conf["spark."+role+".memoryOverhead"]); overhead != "" {
		extra, err := parseMemory(overhead, 1<<20)
		if err != nil {
			return 0, fmt.Errorf("memoryOverhead: %w", err)
		}
		return heapMiB + extra>>20, nil
	}
	factor, err := sparkOverheadFactor(app, role)
	if err != nil {
		return 0, err
	}
	minMiB := int64(sparkMinOverheadMiB)
	if v := conf["spark."+role+".minMemoryOverhead"]; v != "" {
		b, err := parseMemory(v, 1<<20)
		if err != nil {
			return 0, fmt.Errorf("spark.%s.minMemoryOverhead: %w", role, err)
		}
		minMiB = b >> 20
	}
	return heapMiB + max(int64(factor*float64(heapMiB)), minMiB), nil
}

// sparkOverheadFactor is the share of the memory Spark adds as overhead when no overhead is
// given: spark.<role>.memoryOverheadFactor, else the application's memoryOverheadFactor (the
// operator's spark.kubernetes.memoryOverheadFactor), else 0.4 for Python and R applications
// and 0.1 for the JVM ones.
func sparkOverheadFactor(app *sparkv1beta2.SparkApplication, role string) (float64, error) {
	conf := app.Spec.SparkConf
	for _, v := range []string{conf["spark."+role+".memoryOverheadFactor"], app.Spec.MemoryOverheadFactor, conf["spark.kubernetes.memoryOverheadFactor"]} {
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("memory overhead factor %q is not a non-negative number", v)
		}
		return f, nil
	}
	switch app.Spec.Type {
	case sparkv1beta2.SparkApplicationTypePython, sparkv1beta2.SparkApplicationTypeR:
		return 0.4, nil
	}
	return 0.1, nil
}

func imageOf(c *corev1.Container) string {
	if c == nil {
		return ""
	}
	return c.Image
}

func envOf(c *corev1.Container) []corev1.EnvVar {
	if c == nil {
		return nil
	}
	return c.Env
}

func templateServiceAccount(t *corev1.PodTemplateSpec) string {
	if t == nil {
		return ""
	}
	return t.Spec.ServiceAccountName
}

func firstOf(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
