{% macro host() %}{% if env == "prod" %}{{ tenant.name }}.{{ fief.baseDomain }}{% else %}{{ env }}.{{ tenant.name }}.{{ fief.baseDomain }}{% endif %}{% endmacro %}
