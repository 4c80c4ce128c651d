# The Debian package: `cpack -G DEB` in a build directory (or `ninja package`) writes
# portico_VERSION_ARCH.deb from what `cmake --install` puts under /usr (and /etc, /lib), with
# the maintainer scripts, conffiles, changelog and copyright of deploy/debian/ and the
# dependencies dpkg-shlibdeps finds in the binaries. tests/integration/test_debian_package.py
# builds it, checks it with lintian, installs it with dpkg, serves through it and removes it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME portico)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_PACKAGE_CONTACT "Portico developers <maintainers@users.noreply.a-seed-da77629b.example>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION httpd)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# media-types: the static files' content types (/etc/mime.types); adduser: the group portico.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, media-types")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "reverse proxy and HTTP/2 terminator
Portico is a reverse proxy for the place in front of application servers:
an edge proxy, a sidecar in front of one app server, and the point where
request latency is measured and scraped by Prometheus. It terminates
HTTP/1.1, h2c and h2 over TLS, and routes to clusters of unix-socket or TCP
endpoints over pooled HTTP/1.1 or multiplexed h2c connections, with
compression, static files, a cache, rate limits, retries within a budget,
health checks and outlier ejection.

The package also holds portico-backend, a preforked HTTP/1.1 and h2c app
server (hello, counter, echo, static files), and systemd units that run
both, portico in front of portico-backend on a unix socket.")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/conffiles ${CMAKE_CURRENT_LIST_DIR}/postinst
    ${CMAKE_CURRENT_LIST_DIR}/prerm ${CMAKE_CURRENT_LIST_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# Nothing from the tests' build (gtest's own install rules) goes into the package.
set(CPACK_INSTALL_CMAKE_PROJECTS "${CMAKE_BINARY_DIR};portico;ALL;/")
include(CPack)
