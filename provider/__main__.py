"""Entry point of the accel component package: host the components for `pulumi package add`."""

from pulumi.provider.experimental import component_provider_host

from accel.components.package import COMPONENTS

if __name__ == "__main__":
    component_provider_host(COMPONENTS, name="accel")
