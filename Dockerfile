# The Hugging Face Space (docs/web.md): `rlbatch serve` on port 7860. Also: docker build -t rlbatch . &&
# docker run -p 7860:7860 rlbatch
FROM python:3.11-slim
RUN useradd -m -u 1000 user
USER user
ENV PATH="/home/user/.local/bin:$PATH" PYTHONUNBUFFERED=1
WORKDIR /home/user/app
COPY --chown=user . .
RUN pip install --no-cache-dir ".[web]"
EXPOSE 7860
CMD ["python", "app.py"]
