"""What `gpudash verify` imports of the Kubernetes client and prometheus_client: the modules it reads with, not the
package `__init__`s that import every API class and model (most of a run's time) or an HTTP server; a caller that
wants the whole package in the same process still gets it. Run in a fresh process, as the command is."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import REPO

_SCRIPT = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    import yaml
    from generator.checks.exporter import parse
    from generator.clients.kube import Kube
    from generator.clients.options import Options

    config = Path(sys.argv[1])
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t0ken-for-the-test"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    os.environ["KUBECONFIG"] = str(config)
    kube = Kube(Options())
    samples = parse('# TYPE DCGM_FI_DEV_GPU_TEMP gauge\\nDCGM_FI_DEV_GPU_TEMP{gpu="0"} 41\\n')
    loaded = sorted(name for name in ("kubernetes.client.models.v1_pod", "kubernetes.client.api.core_v1_api",
                                      "kubernetes.watch", "google.oauth2.service_account", "prometheus_client.exposition",
                                      "oauthlib.oauth2.rfc6749", "requests_oauthlib.oauth2_session")
                    if name in sys.modules)
    made = kube.api.configuration.host, kube.api.configuration.api_key
    from kubernetes.client import CoreV1Api, V1Pod          # the whole package, when a caller wants it
    import kubernetes
    import google.auth.transport.requests as transport
    from prometheus_client import Counter
    from requests_oauthlib import OAuth2Session
    import oauthlib.oauth2
    whole = [CoreV1Api.__name__, V1Pod.__name__, kubernetes.watch.Watch.__name__, kubernetes.__version__ != "",
             transport.Request.__name__, Counter.__name__, isinstance(OAuth2Session, type) and OAuth2Session.__name__,
             oauthlib.oauth2.WebApplicationClient.__name__]
    print(json.dumps({"loaded": loaded, "host": made[0], "key": made[1], "whole": whole,
                      "value": samples["DCGM_FI_DEV_GPU_TEMP"][0].value}))
''')


def test_verify_reads_with_the_clients_modules_not_their_packages_and_the_packages_stay_whole(tmp_path):
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / "kubeconfig")], capture_output=True,
                            text=True, cwd=REPO, timeout=120, check=True)
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer["loaded"] == []
    assert answer["host"] == "http://127.0.0.1:9" and answer["key"] == {"authorization": "Bearer t0ken-for-the-test"}
    assert answer["value"] == 41.0
    assert answer["whole"] == ["CoreV1Api", "V1Pod", "Watch", True, "Request", "Counter", "OAuth2Session",
                               "WebApplicationClient"]


_CLOUDWATCH = textwrap.dedent('''
    import json, os, sys
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    from generator.clients.cloudwatch import CloudWatch
    client = CloudWatch(endpoint_url="http://127.0.0.1:9").client("us-east-1")
    print(json.dumps({"boto3": sorted(name for name in ("boto3", "s3transfer") if name in sys.modules),
                      "operation": client.meta.method_to_api_mapping["list_metrics"]}))
''')


def test_the_cloudwatch_client_is_botocores_without_boto3(tmp_path):
    """verify's CloudWatch side (the longer of its two processes) makes its client from botocore's session: boto3's
    import (its resource layer and s3transfer) is no part of a run."""
    result = subprocess.run([sys.executable, "-c", _CLOUDWATCH], capture_output=True, text=True, cwd=REPO,
                            timeout=120, check=True)
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer == {"boto3": [], "operation": "ListMetrics"}


_MODEL_FOLDERS = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DATA_PATH=sys.argv[1])
    import botocore
    from botocore.loaders import create_loader
    from generator.clients.cloudwatch import TAGGING, CloudWatch
    data = Path(botocore.__file__).parent / "data"
    listed = []
    listdir = os.listdir
    os.listdir = lambda path=".": listed.append(Path(path)) or listdir(path)
    cloudwatch = CloudWatch(endpoint_url="http://127.0.0.1:9")
    client, tagging = cloudwatch.client("us-east-1"), cloudwatch.client("eu-west-1", TAGGING)
    services = sorted({p.relative_to(data).parts[0] for p in listed if p.is_relative_to(data) and p != data})
    loader = cloudwatch.session.get_component("data_loader")
    print(json.dumps({"services": services, "marker": hasattr(client, "gpudash_marker"),
                      "tagging": tagging.meta.method_to_api_mapping["get_resources"],
                      "paths": loader.search_paths == create_loader(sys.argv[1]).search_paths}))
''')


def test_the_cloudwatch_client_reads_the_model_folders_of_the_services_it_calls_only(tmp_path):
    """botocore looks for a service's model by listing every service it has one of (about 400 folders, 2,700 file
    checks, twice per client: a twentieth of verify's CloudWatch side); gpudash's clients look in the folders of the
    services they call and of those the credential chain calls (a profile assuming a role asks STS), where botocore
    looks, a model in AWS_DATA_PATH first."""
    import gzip

    import botocore

    data = tmp_path / "models"
    shipped = next((Path(botocore.__file__).parent / "data" / "cloudwatch").glob("*/service-2.json*"))
    model = json.loads(gzip.decompress(shipped.read_bytes()) if shipped.suffix == ".gz" else shipped.read_bytes())
    model["operations"]["GpudashMarker"] = {**model["operations"]["ListMetrics"], "name": "GpudashMarker"}
    own = data / "cloudwatch" / shipped.parent.name
    own.mkdir(parents=True)
    (own / "service-2.json").write_text(json.dumps(model))
    result = subprocess.run([sys.executable, "-c", _MODEL_FOLDERS, str(data)], capture_output=True, text=True,
                            cwd=REPO, timeout=120, check=True)
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer == {"services": ["cloudwatch", "resourcegroupstaggingapi", "signin", "sso", "sso-oidc", "sts"],
                      "marker": True,
                      "tagging": "GetResources", "paths": True}


_CLIENT_PACKAGES = textwrap.dedent('''
    import json, os, sys
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    from generator.clients.cloudwatch import CloudWatch
    from generator.clients.http import get
    import requests
    client = CloudWatch(endpoint_url="http://127.0.0.1:9").client("us-east-1")
    loaded = sorted(name for name in ("importlib.metadata", "charset_normalizer.api", "botocore.docs.service")
                    if name in sys.modules)
    answer = requests.models.Response()
    answer._content = "Grüße".encode("utf-8")
    import urllib3.http2, botocore.docs                   # the whole packages, when a caller wants them
    whole = [answer.apparent_encoding, urllib3.http2.inject_into_urllib3.__name__, botocore.docs.generate_docs.__name__,
             client.meta.method_to_api_mapping["list_metrics"]]
    print(json.dumps({"loaded": loaded, "whole": whole}))
''')


def test_the_clients_import_no_charset_guesser_http2_check_or_botocore_documenter_and_those_stay_whole():
    """A client's process imports neither charset_normalizer's detector (requests guesses no charset for gpudash:
    answers are decoded by the charset they name), nor importlib.metadata (urllib3's HTTP/2 package's `__init__`, for a
    version check of h2 nothing calls), nor botocore's service documenter; a caller that reads them gets them whole."""
    result = subprocess.run([sys.executable, "-c", _CLIENT_PACKAGES], capture_output=True, text=True, cwd=REPO,
                            timeout=120, check=True)
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer == {"loaded": [], "whole": ["utf-8", "inject_into_urllib3", "generate_docs", "ListMetrics"]}


_WITHOUT_CHARSET_NORMALIZER = textwrap.dedent('''
    import json, sys, warnings

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "charset_normalizer":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    warnings.simplefilter("ignore")                       # requests warns that it found no charset guesser
    import generator.clients
    from generator.clients.http import get
    import requests
    print(json.dumps({"requests": requests.get.__name__, "charset_normalizer": "charset_normalizer" in sys.modules}))
''')


def test_the_clients_import_where_a_deferred_package_is_not_installed():
    """requests takes chardet or charset_normalizer, or neither: without charset_normalizer the clients still import
    (nothing is deferred for it)."""
    result = subprocess.run([sys.executable, "-c", _WITHOUT_CHARSET_NORMALIZER], capture_output=True, text=True,
                            cwd=REPO, timeout=120, check=True)
    assert json.loads(result.stdout.splitlines()[-1]) == {"requests": "get", "charset_normalizer": False}
