# linkpatrol in a container:
#   docker build -t linkpatrol .
#   docker run --rm -u "$(id -u):$(id -g)" -v "$PWD:/work" linkpatrol check ./public
# The folder mounted on /work is the working folder: the paths to check, the memory
# (linkpatrol.db unless --db says otherwise) and the reports are there.

FROM python:3.12-slim AS build
# a C compiler in the build stage only: an image is built once and crawls often, so its
# hot modules are compiled (setup.py)
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/linkpatrol
COPY pyproject.toml setup.py build_backend.py README.md /src/
COPY linkpatrol /src/linkpatrol
RUN LINKPATROL_COMPILE=1 /opt/linkpatrol/bin/pip install --no-cache-dir --disable-pip-version-check /src

FROM python:3.12-slim
ENV PATH=/opt/linkpatrol/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/linkpatrol /opt/linkpatrol
RUN useradd --create-home --uid 10001 --user-group linkpatrol \
    && mkdir /work && chown linkpatrol:linkpatrol /work
USER linkpatrol
WORKDIR /work
ENTRYPOINT ["linkpatrol"]
CMD ["--help"]
