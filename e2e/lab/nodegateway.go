package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The node lab's gateway is a real Gateway API implementation: Traefik,
// built from the Go module proxy (make node-components), its
// kubernetesgateway provider reading the Gateway API objects of the
// cluster and routing to the pods' addresses. Its Service is the
// walkthrough's projectcontour/envoy, the Service the GatewayDNS names.
const (
	// TraefikVersion is the Traefik the Makefile builds (TRAEFIK_VERSION):
	// the newest v3 release whose module builds from the module proxy
	// alone (v3.7 needs a nested module the proxy does not serve).
	TraefikVersion = "v3.6.12"
	// TraefikImage is the image the lab writes of bin/traefik-<version>.
	TraefikImage = "lab.xcc.test/traefik:" + TraefikVersion
	// GatewayAPIVersion is the sigs.k8s.io/gateway-api module Traefik's
	// go.mod requires; the lab installs its standard and experimental
	// CRDs (TCPRoute, TLSRoute) into every workload cluster.
	GatewayAPIVersion = "v1.4.0"
	gatewayAPIModule  = "sigs.k8s.io/gateway-api"
	traefikCRDDir     = "config/crd/experimental"
	// GatewayClassName is the lab's GatewayClass, Traefik's controller.
	GatewayClassName = "traefik"
	// GatewayObjectName is the Gateway in GatewayNamespace.
	GatewayObjectName = "gateway"
	// TraefikName is Traefik's Deployment, ServiceAccount and ClusterRole.
	TraefikName = "traefik"
	// KuardNamespace and KuardName are the walkthrough's workload in
	// the first workload cluster: a Deployment and Service behind the
	// HTTPRoute of its name kuard.gateway.<cluster>...
	KuardNamespace = "default"
	KuardName      = "kuard"

	traefikController = "traefik.io/gateway-controller"
	// Traefik maps a Gateway listener to the entry point of its port:
	// the Service's http port 80 goes to this one.
	traefikHTTPPort  = 8080
	traefikPingPort  = 9000
	gatewayReadyWait = 120 * time.Second
)

var (
	gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	gatewayGVR      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	// HTTPRouteGVR is the Gateway API's HTTPRoute.
	HTTPRouteGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// traefikImage writes the image archive of bin/traefik-<version>.
func (l *NodeLab) traefikImage(dir string) (string, error) {
	bin := filepath.Join(l.RepoRoot, "bin", "traefik-"+TraefikVersion)
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("the node lab needs %s: make node-components builds it", bin)
	}
	exe := filepath.Join(dir, "traefik")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		return "", err
	}
	archive := exe + ".tar"
	if err := WriteBinaryImage(exe, TraefikImage, "65532:65532", nil, false, archive); err != nil {
		return "", fmt.Errorf("image %s: %w", TraefikImage, err)
	}
	return archive, nil
}

// installGatewayAPI installs the Gateway API CRDs of the version Traefik
// is built with, standard and experimental channel, into c.
func installGatewayAPI(ctx context.Context, c *Cluster) error {
	dir, err := moduleDir(ctx, gatewayAPIModule, GatewayAPIVersion)
	if err != nil {
		return err
	}
	crdDir := filepath.Join(dir, traefikCRDDir)
	files, err := filepath.Glob(filepath.Join(crdDir, "gateway.networking.*.yaml"))
	if err != nil {
		return fmt.Errorf("glob the Gateway API CRDs in %s: %w", crdDir, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no Gateway API CRDs in %s", crdDir)
	}
	for _, f := range files {
		if err := installCRDFile(ctx, c, f); err != nil {
			return err
		}
	}
	return nil
}

// startGateway installs the Gateway API CRDs into c, runs Traefik as
// its Gateway controller behind projectcontour/envoy (a LoadBalancer
// Service given its address as MetalLB would) and creates the
// GatewayClass and the Gateway, one HTTP listener for every namespace's
// routes.
func (l *NodeLab) startGateway(ctx context.Context, c *NodeCluster) error {
	if err := installGatewayAPI(ctx, c.Cluster); err != nil {
		return err
	}
	if err := l.installEastWestCRDs(ctx, c.Cluster); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c.Cluster, GatewayNamespace); err != nil {
		return err
	}
	if err := createTraefikRBAC(ctx, c); err != nil {
		return err
	}
	if err := createTraefik(ctx, c); err != nil {
		return err
	}
	if err := createGatewayService(ctx, c); err != nil {
		return err
	}
	if _, err := ApplyYAML(ctx, c.Cluster, gatewayClassGVR, gatewayClassYAML); err != nil {
		return err
	}
	_, err := ApplyYAML(ctx, c.Cluster, gatewayGVR, gatewayYAML)
	return err
}

var gatewayClassYAML = fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: %s
spec:
  controllerName: %s
`, GatewayClassName, traefikController)

var gatewayYAML = fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: %s
  namespace: %s
spec:
  gatewayClassName: %s
  listeners:
  - name: http
    protocol: HTTP
    port: %d
    allowedRoutes:
      namespaces:
        from: All
`, GatewayObjectName, GatewayNamespace, GatewayClassName, traefikHTTPPort)

// createTraefikRBAC lets Traefik's ServiceAccount read what its
// kubernetesgateway provider watches and write the routes' status.
func createTraefikRBAC(ctx context.Context, c *NodeCluster) error {
	read := []string{"get", "list", "watch"}
	gatewayKinds := []string{"gatewayclasses", "gateways", "httproutes", "grpcroutes", "tcproutes", "tlsroutes",
		"referencegrants", "backendtlspolicies"}
	var statuses []string
	for _, k := range gatewayKinds {
		statuses = append(statuses, k+"/status")
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: TraefikName},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces", "services", "secrets", "configmaps"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: gatewayKinds, Verbs: read},
			{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: statuses, Verbs: []string{"update", "patch"}},
		},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: TraefikName, Namespace: GatewayNamespace}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TraefikName},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: TraefikName},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: TraefikName, Namespace: GatewayNamespace}},
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(GatewayNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/%s on %s: %w", GatewayNamespace, TraefikName, c.Name, err)
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s on %s: %w", TraefikName, c.Name, err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s on %s: %w", TraefikName, c.Name, err)
	}
	return nil
}

// traefikArgs: the web entry point for the Gateway's HTTP listener (and
// the east-west Gateway's), one for the east-west Gateway's TCP listener, the
// kubernetesgateway provider with the experimental channel (TCPRoute,
// TLSRoute), ping for the readiness probe on an entry point of its own,
// and nothing that calls out of the lab.
var traefikArgs = []string{
	fmt.Sprintf("--entryPoints.web.address=:%d", traefikHTTPPort),
	fmt.Sprintf("--entryPoints.traefik.address=:%d", traefikPingPort),
	fmt.Sprintf("--entryPoints.eastwest-tcp.address=:%d", EastWestTCPPort),
	// The Gateways' status addresses: the load-balancer address of the
	// Service in front of Traefik, what importers of another network dial.
	"--providers.kubernetesgateway.statusAddress.service.name=" + GatewayName,
	"--providers.kubernetesgateway.statusAddress.service.namespace=" + GatewayNamespace,
	"--ping=true",
	"--providers.kubernetesgateway=true",
	"--providers.kubernetesgateway.experimentalChannel=true",
	"--global.checkNewVersion=false",
	"--global.sendAnonymousUsage=false",
	"--log.level=INFO",
	"--log.noColor=true",
	"--accessLog=true",
}

func createTraefik(ctx context.Context, c *NodeCluster) error {
	labels := map[string]string{"app": TraefikName}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: TraefikName, Namespace: GatewayNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: TraefikName,
					Containers: []corev1.Container{{
						Name: TraefikName, Image: TraefikImage, ImagePullPolicy: corev1.PullNever,
						Args: traefikArgs,
						Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: traefikHTTPPort}, {Name: "ping", ContainerPort: traefikPingPort},
							{Name: "eastwest-tcp", ContainerPort: EastWestTCPPort}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ping", Port: intstr.FromInt32(traefikPingPort)}},
							PeriodSeconds: 2,
						},
					}},
				},
			},
		},
	}
	if _, err := c.Client.AppsV1().Deployments(GatewayNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Deployment %s/%s on %s: %w", GatewayNamespace, TraefikName, c.Name, err)
	}
	return nil
}

// createGatewayService creates projectcontour/envoy, the Service the
// walkthrough's GatewayDNS names, in front of Traefik, and sets its
// load-balancer address as MetalLB would (the router routes the pool to
// the node, where kube-proxy answers it).
func createGatewayService(ctx context.Context, c *NodeCluster) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Namespace: GatewayNamespace},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": TraefikName},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(traefikHTTPPort), Protocol: corev1.ProtocolTCP},
				// The east-west Gateway's listener ports, at the same address.
				{Name: "eastwest-http", Port: traefikHTTPPort, TargetPort: intstr.FromInt32(traefikHTTPPort), Protocol: corev1.ProtocolTCP},
				{Name: "eastwest-tcp", Port: EastWestTCPPort, TargetPort: intstr.FromInt32(EastWestTCPPort), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := c.Client.CoreV1().Services(GatewayNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s on %s: %w", GatewayNamespace, GatewayName, c.Name, err)
	}
	return SetGateway(ctx, c.Cluster, Gateway{IPs: []string{c.GatewayAddress()}})
}

// startKuard runs the walkthrough's workload in c: kuard (the probe
// image serving HTTP, answering its pod's name) behind a ClusterIP
// Service, and the HTTPRoute that sends the Gateway's requests for
// kuard.gateway.<cluster>... to it.
func (l *NodeLab) startKuard(ctx context.Context, c *NodeCluster) error {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: KuardName, Namespace: KuardNamespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": KuardName}},
			Template: probeWorkload(KuardName, 8080)},
	}
	if _, err := c.Client.AppsV1().Deployments(KuardNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Deployment %s/%s on %s: %w", KuardNamespace, KuardName, c.Name, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: KuardName, Namespace: KuardNamespace},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": KuardName},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := c.Client.CoreV1().Services(KuardNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s on %s: %w", KuardNamespace, KuardName, c.Name, err)
	}
	_, err := ApplyYAML(ctx, c.Cluster, HTTPRouteGVR, kuardRouteYAML(c.Name))
	return err
}

func kuardRouteYAML(cluster string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: %s
  namespace: %s
spec:
  parentRefs:
  - name: %s
    namespace: %s
  hostnames:
  - %s
  rules:
  - backendRefs:
    - name: %s
      port: 80
`, KuardName, KuardNamespace, GatewayObjectName, GatewayNamespace, GatewayHost(KuardName, cluster), KuardName)
}

// waitRouteAccepted waits until Traefik has written the HTTPRoute ns/name's
// status: accepted by the lab's Gateway, its backends resolved.
func waitRouteAccepted(ctx context.Context, c *Cluster, ns, name string) error {
	return waitFor(ctx, nil, gatewayReadyWait, fmt.Sprintf("HTTPRoute %s/%s of %s accepted", ns, name, c.Name), func(ctx context.Context) error {
		r, err := c.Dynamic.Resource(HTTPRouteGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		parents, _, _ := unstructured.NestedSlice(r.Object, "status", "parents")
		for _, p := range parents {
			pm, _ := p.(map[string]any)
			conds, _, _ := unstructured.NestedSlice(pm, "conditions")
			if conditionTrue(conds, "Accepted") && conditionTrue(conds, "ResolvedRefs") {
				return nil
			}
		}
		return fmt.Errorf("status.parents %v", parents)
	})
}

func conditionTrue(conds []any, typ string) bool {
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == typ && cm["status"] == "True" {
			return true
		}
	}
	return false
}
