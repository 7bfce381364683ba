# Sourced helper: derive Debian mirror URIs from the host's deb822 sources and
# create a private apt configuration. Never touches /etc/apt.
# Usage: apt_setup <dir> <suite-spec>...   suite-spec = "debian:bookworm" | "security:bookworm-security"
set -eu
HOST_SOURCES=${HOST_SOURCES:-/etc/apt/sources.list.d/debian.sources}

# Prints "<main-uri> <security-uri>" parsed from a deb822 file: a stanza whose
# Suites contain "*-security" gives the security URI, else the main URI.
derive_uris() {
  awk '
    function flush() { if (uris != "") { if (suites ~ /-security/) { if (sec == "") sec = uris } else { if (main == "") main = uris } } uris=""; suites="" }
    /^[[:space:]]*#/ { next }
    /^[[:space:]]*$/ { flush(); next }
    tolower($1) == "uris:"   { uris = $2 }
    tolower($1) == "suites:" { $1=""; suites = $0 }
    END { flush(); if (main == "" || sec == "") exit 1; print main, sec }
  ' "$HOST_SOURCES"
}

KEYRING=${KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

apt_setup() {
  local dir=$1; shift
  local uris main sec
  uris=$(derive_uris) || { echo "cannot derive mirror URIs from $HOST_SOURCES" >&2; return 1; }
  main=${uris% *}; sec=${uris#* }
  mkdir -p "$dir/etc/sources.list.d" "$dir/etc/preferences.d" "$dir/etc/apt.conf.d" \
           "$dir/state/lists/partial" "$dir/cache/archives/partial" "$dir/log"
  : > "$dir/etc/sources.list"
  local spec kind suite uri
  for spec in "$@"; do
    kind=${spec%%:*}; suite=${spec#*:}
    case $kind in debian) uri=$main ;; security) uri=$sec ;; *) echo "bad spec $spec" >&2; return 1 ;; esac
    echo "deb [arch=amd64 signed-by=$KEYRING] $uri $suite main" >> "$dir/etc/sources.list"
  done
  cat > "$dir/apt.conf" <<CONF
// Isolation: this file is passed BOTH as APT_CONFIG (read before any
// /etc/apt/apt.conf.d part, so the Parts/Main redirection below takes
// effect) and as -c. The host's apt.conf.d has APT::Update::Post-Invoke hooks
// (docker-clean deletes /var/cache/apt/archives/*.deb, appstream refresh) that
// must not run from our private "update".
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear DPkg::Post-Invoke;
#clear DPkg::Pre-Install-Pkgs;
Dir::Etc "$dir/etc/";
Dir::Etc::main "$dir/apt.conf";
Dir::Etc::Parts "$dir/etc/apt.conf.d/";
Dir::Etc::SourceList "$dir/etc/sources.list";
Dir::Etc::SourceParts "$dir/etc/sources.list.d/";
Dir::Etc::Preferences "$dir/etc/preferences";
Dir::Etc::PreferencesParts "$dir/etc/preferences.d/";
Dir::State "$dir/state/";
Dir::State::Lists "$dir/state/lists/";
Dir::State::status "/var/lib/dpkg/status";
Dir::Cache "$dir/cache/";
Dir::Cache::Archives "$dir/cache/archives/";
Dir::Log "$dir/log/";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
Acquire::Languages "none";
Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
Acquire::Retries "3";
APT::Get::AllowUnauthenticated "false";
// downloads go to a root-owned private dir; do not drop to _apt
APT::Sandbox::User "root";
CONF
}

# Run apt-get/apt-cache against the private configuration.
papt() { local dir=$1 tool=$2; shift 2; APT_CONFIG="$dir/apt.conf" "$tool" -c "$dir/apt.conf" "$@"; }
