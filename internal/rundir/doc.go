// Package rundir gives Mesa's Vulkan drivers an XDG_RUNTIME_DIR when the
// environment has none, so that opening webgpu prints nothing on stderr.
package rundir
